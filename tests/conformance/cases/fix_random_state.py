"""The random state fixed by the built-in providers: ``set_rng_state(get_rng_state())`` replays every random op
the field calls, ``manual_seed`` replays, ``fork_rng`` restores; values themselves differ between generators, so
each case compares PyTorch's facts (replayed, changed, in range), not draws."""

from __future__ import annotations

from typing import Any, Callable

from conformance.harness import case

_OPS: dict[str, Callable[[Any], Any]] = {
    "rand": lambda torch: torch.rand(5),
    "randn": lambda torch: torch.randn(2, 3),
    "randint": lambda torch: torch.randint(0, 1000, (6,)),
    "randperm": lambda torch: torch.randperm(12),
    "normal": lambda torch: torch.normal(0.0, 1.0, (4,)),
    "normal_": lambda torch: torch.empty(5).normal_(2.0, 3.0),
    "uniform_": lambda torch: torch.empty(5).uniform_(-1.0, 1.0),
    "exponential_": lambda torch: torch.empty(5).exponential_(),
    "random_": lambda torch: torch.empty(6).random_(1000),
    "random_int64_full": lambda torch: torch.empty(3, dtype=torch.int64).random_(),
    "bernoulli": lambda torch: torch.bernoulli(torch.full((16,), 0.5)),
    "dropout": lambda torch: torch.nn.functional.dropout(torch.ones(16), 0.5, True),
    "dropout_module": lambda torch: torch.nn.Dropout(0.3)(torch.ones(16)),
    "rand_like": lambda torch: torch.rand_like(torch.ones(3)),
    "randn_like": lambda torch: torch.randn_like(torch.ones(3)),
    "multinomial": lambda torch: torch.multinomial(torch.ones(8), 4),
    "init_normal_": lambda torch: torch.nn.init.normal_(torch.empty(3, 4), mean=0.0, std=0.02),
    "init_uniform_": lambda torch: torch.nn.init.uniform_(torch.empty(3, 4), -0.1, 0.1),
    "init_xavier_uniform_": lambda torch: torch.nn.init.xavier_uniform_(torch.empty(3, 4)),
    "init_kaiming_uniform_": lambda torch: torch.nn.init.kaiming_uniform_(torch.empty(3, 4), a=5 ** 0.5),
}


def _same(torch: Any, a: Any, b: Any) -> bool:
    return bool(torch.equal(a, b))


@case("torch.get_rng_state", "torch.set_rng_state", "torch.rand", "torch.randn", "torch.randint", "torch.randperm",
      "torch.normal", "Tensor.normal_", "Tensor.uniform_", "Tensor.exponential_", "Tensor.random_", "torch.bernoulli",
      "torch.nn.functional.dropout", "torch.rand_like", "torch.randn_like", "torch.multinomial",
      "torch.nn.init.normal_", "torch.nn.init.uniform_", "torch.nn.init.xavier_uniform_",
      "torch.nn.init.kaiming_uniform_")
def state_replays_every_random_op(torch: Any) -> Any:
    """Each op, drawn after a few other draws: the state taken before it replays it; the next draw differs."""
    facts = {}
    for name, op in _OPS.items():
        torch.manual_seed(99)
        torch.rand(3)
        torch.randn(2)
        state = torch.get_rng_state()
        first, second = op(torch), op(torch)
        torch.set_rng_state(state)
        again, again_second = op(torch), op(torch)
        facts[name] = {"replays": _same(torch, first, again) and _same(torch, second, again_second),
                       "next_differs": not _same(torch, first, second), "dtype": first.dtype,
                       "shape": tuple(first.shape)}
    return facts


@case("torch.manual_seed", "torch.random.manual_seed", "torch.rand", "torch.randperm", "torch.nn.init.normal_")
def manual_seed_replays_and_seeds_differ(torch: Any) -> Any:
    def draws(seed: int) -> list[Any]:
        torch.random.manual_seed(seed)
        return [torch.rand(4), torch.randperm(20), torch.nn.init.normal_(torch.empty(4)), torch.randn(3)]

    first, again, other = draws(5), draws(5), draws(6)
    return {"replays": [_same(torch, a, b) for a, b in zip(first, again)],
            "seed_matters": [not _same(torch, a, b) for a, b in zip(first, other)]}


@case("torch.get_rng_state", "torch.set_rng_state")
def state_restores_across_reseeding_and_keeps_its_shape(torch: Any) -> Any:
    """A state taken mid-stream restores after manual_seed of another seed and after many draws; taking it
    changes nothing; it is a uint8 tensor of a fixed size, a fresh tensor each time."""
    torch.manual_seed(3)
    torch.rand(7)
    state = torch.get_rng_state()
    expected = [torch.rand(4), torch.randn(4), torch.randint(0, 100, (4,))]
    torch.manual_seed(4)
    for _ in range(3):
        torch.rand(5)
        torch.nn.functional.dropout(torch.ones(5), 0.5, True)
    torch.set_rng_state(state)
    torch.get_rng_state()
    replayed = [torch.rand(4), torch.randn(4), torch.randint(0, 100, (4,))]
    later = torch.get_rng_state()
    return {"replays": [_same(torch, a, b) for a, b in zip(expected, replayed)], "dtype": state.dtype,
            "same_size": tuple(state.shape) == tuple(later.shape), "fresh": state is not later,
            "moved": not _same(torch, state, later)}


@case("torch.random.fork_rng", "torch.rand", "torch.randn")
def fork_rng_restores_the_stream(torch: Any) -> Any:
    torch.manual_seed(11)
    expected = torch.rand(4)
    torch.manual_seed(11)
    with torch.random.fork_rng(devices=[]):
        inside = torch.rand(4)
        torch.randn(6)
    after = torch.rand(4)
    return {"inside_is_the_stream": _same(torch, inside, expected), "restored": _same(torch, after, expected)}


@case("torch.bernoulli", "Tensor.bernoulli", "Tensor.bernoulli_")
def bernoulli_follows_its_probabilities(torch: Any) -> Any:
    torch.manual_seed(21)
    certain = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    many = torch.bernoulli(torch.full((4000,), 0.2))
    base = torch.zeros(2, 6)
    view = base[:, 1:4]
    view.bernoulli_(1.0)
    filled = torch.zeros(5, dtype=torch.float64).bernoulli_(0.0)
    refused = []
    for probability in (1.5, -0.1):
        try:
            torch.zeros(3).bernoulli_(probability)
        except RuntimeError:
            refused.append(probability)
    return {"certain": torch.bernoulli(certain), "method": certain.bernoulli(), "share_near": abs(
        float(many.mean()) - 0.2) < 0.03, "dtype": many.dtype, "view_base": base, "float64": filled,
        "refused": refused}


@case("Tensor.random_", "torch.utils.data.DataLoader")
def random_fills_its_range_and_shuffles_a_dataloader(torch: Any) -> Any:
    torch.manual_seed(13)
    many = torch.zeros(3000, dtype=torch.int32).random_(3, 7)
    base = torch.zeros(2, 4)
    base[:, 1:3].random_(1, 2)
    floats = torch.empty(2000).random_()
    flags = torch.zeros(200, dtype=torch.bool).random_()
    refused = []
    for bounds in ((5, 2), (4, 4)):
        try:
            torch.empty(2).random_(*bounds)
        except RuntimeError:
            refused.append(bounds)

    def shuffled() -> list[int]:
        torch.manual_seed(5)
        loader = torch.utils.data.DataLoader(list(range(12)), batch_size=4, shuffle=True)
        return [int(v) for batch in loader for v in batch]

    order = shuffled()
    return {"values": sorted(set(many.tolist())), "dtype": many.dtype, "view_base": base,
            "float_range": [float(floats.min()) >= 0, float(floats.max()) <= 2**24,
                            bool((floats == floats.round()).all())],
            "both_flags": sorted(set(flags.tolist())), "refused": refused,
            "shuffle_is_permutation": sorted(order) == list(range(12)), "shuffled": order != list(range(12)),
            "shuffle_replays": order == shuffled()}


@case("torch.set_rng_state")
def set_rng_state_refuses_a_foreign_state(torch: Any) -> Any:
    """A float tensor is not a generator state: PyTorch raises (RuntimeError / TypeError), so must we."""
    torch.set_rng_state(torch.zeros(3))


_GENERATOR_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "rand": lambda torch, g: torch.rand(5, generator=g),
    "randn": lambda torch, g: torch.randn(2, 3, generator=g),
    "randint": lambda torch, g: torch.randint(0, 1000, (6,), generator=g),
    "randint_high_size": lambda torch, g: torch.randint(1000, (6,), generator=g),
    "randperm": lambda torch, g: torch.randperm(12, generator=g),
    "normal": lambda torch, g: torch.normal(0.0, 1.0, (4,), generator=g),
    "multinomial": lambda torch, g: torch.multinomial(torch.ones(8), 4, generator=g),
    "bernoulli": lambda torch, g: torch.bernoulli(torch.full((16,), 0.5), generator=g),
    "bernoulli_": lambda torch, g: torch.empty(16).bernoulli_(0.5, generator=g),
    "normal_": lambda torch, g: torch.empty(5).normal_(2.0, 3.0, generator=g),
    "uniform_": lambda torch, g: torch.empty(5).uniform_(-1.0, 1.0, generator=g),
    "exponential_": lambda torch, g: torch.empty(5).exponential_(generator=g),
    "random_": lambda torch, g: torch.empty(6).random_(1000, generator=g),
    "init_normal_": lambda torch, g: torch.nn.init.normal_(torch.empty(3, 4), generator=g),
}


@case("torch.Generator", "torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.normal",
      "torch.multinomial", "torch.bernoulli", "Tensor.bernoulli_", "Tensor.normal_", "Tensor.uniform_",
      "Tensor.exponential_", "Tensor.random_", "torch.nn.init.normal_")
def generator_is_its_own_stream(torch: Any) -> Any:
    """Each op with ``generator=g``: g.manual_seed replays it, whatever the global seed; a generator seeded
    alike agrees; g.get_state/set_state replay; the draw does not move the global stream."""
    facts = {}
    for name, op in _GENERATOR_OPS.items():
        g, twin = torch.Generator(), torch.Generator()
        torch.manual_seed(0)
        g.manual_seed(3)
        first, second = op(torch, g), op(torch, g)
        torch.manual_seed(1)
        g.manual_seed(3)
        again = op(torch, g)
        twin.manual_seed(3)
        state = g.get_state()
        third = op(torch, g)
        g.set_state(state)
        torch.manual_seed(7)
        global_state = torch.get_rng_state()
        third_again = op(torch, g)
        global_untouched = _same(torch, torch.get_rng_state(), global_state)
        after_draw = torch.rand(4)
        torch.set_rng_state(global_state)
        facts[name] = {"reseed_replays": _same(torch, first, again), "next_differs": not _same(torch, first, second),
                       "twin_agrees": _same(torch, op(torch, twin), first),
                       "state_replays": _same(torch, third, third_again),
                       "global_untouched": global_untouched and _same(torch, after_draw, torch.rand(4)),
                       "dtype": first.dtype, "shape": tuple(first.shape)}
    return facts


@case("torch.Generator", "torch.Generator.manual_seed", "torch.Generator.initial_seed", "torch.Generator.seed",
      "torch.utils.data.RandomSampler")
def generator_methods(torch: Any) -> Any:
    """manual_seed returns the generator (MindSpeed-LLM's ``torch.Generator().manual_seed(seed)``), initial_seed
    reads it back; seed() reseeds; a RandomSampler with a seeded generator replays."""
    g = torch.Generator().manual_seed(1234)
    sampler_orders = []
    for _ in range(2):
        sampler = torch.utils.data.RandomSampler(range(10), generator=torch.Generator().manual_seed(5))
        sampler_orders.append(list(sampler))
    initial = g.initial_seed()
    reseeded = g.seed()
    return {"manual_seed_returns_generator": isinstance(g, torch.Generator), "initial_seed": initial,
            "seed_sets_initial_seed": g.initial_seed() == reseeded,
            "sampler_replays": sampler_orders[0] == sampler_orders[1],
            "sampler_is_permutation": sorted(sampler_orders[0]) == list(range(10))}


@case("torch.randint")
def randint_overloads(torch: Any) -> Any:
    """PyTorch's randint(high, size) and randint(low, high, size) with keywords; the range and dtype they give."""
    torch.manual_seed(0)
    calls = {"high_size": lambda: torch.randint(5, (200,)), "low_high_size": lambda: torch.randint(3, 6, (200,)),
             "size_keyword": lambda: torch.randint(5, size=(200,)),
             "all_keywords": lambda: torch.randint(low=2, high=4, size=(200,)),
             "dtype": lambda: torch.randint(0, 9, (200,), dtype=torch.int32),
             "float_dtype": lambda: torch.randint(0, 9, (200,), dtype=torch.float32)}
    facts = {}
    for name, call in calls.items():
        value = call()
        facts[name] = {"min": int(value.min()), "max": int(value.max()), "dtype": value.dtype,
                       "shape": tuple(value.shape)}
    return facts


@case("torch.nn.init.trunc_normal_", "torch.utils.data.SubsetRandomSampler", "torch.utils.data.random_split",
      "torch.multinomial", "torch.utils.data.WeightedRandomSampler")
def generator_consumers_replay(torch: Any) -> Any:
    """What takes a ``generator=`` and passes it on (init, samplers, random_split; multinomial with replacement
    as WeightedRandomSampler draws, float32 weights): a generator seeded alike
    gives the same draw, whatever the global seed; another seed gives another."""
    def draws(seed: int, global_seed: int) -> list[Any]:
        torch.manual_seed(global_seed)
        weight = torch.nn.init.trunc_normal_(torch.empty(4, 4), std=0.5, generator=torch.Generator().manual_seed(seed))
        weighted = torch.multinomial(torch.tensor([0.1, 0.2, 0.3, 0.4]), 12, replacement=True,
                                     generator=torch.Generator().manual_seed(seed)).tolist()
        subset = list(torch.utils.data.SubsetRandomSampler(list(range(10, 20)),
                                                           generator=torch.Generator().manual_seed(seed)))
        parts = torch.utils.data.random_split(range(10), [6, 4], generator=torch.Generator().manual_seed(seed))
        sampler = list(torch.utils.data.WeightedRandomSampler([0.1, 0.2, 0.3, 0.4], 12,
                                                              generator=torch.Generator().manual_seed(seed)))
        return [weight.tolist(), weighted, subset, [list(part.indices) for part in parts], sampler]

    first, again, other = draws(11, 0), draws(11, 1), draws(12, 0)
    return {"replays": [a == b for a, b in zip(first, again)], "seed_matters": [a != b for a, b in zip(first, other)],
            "trunc_normal_in_range": all(-2.0 <= value <= 2.0 for row in first[0] for value in row),
            "weighted_in_range": all(0 <= index < 4 for index in first[1] + first[4]),
            "subset_is_permutation": sorted(first[2]) == list(range(10, 20)),
            "split_sizes": [len(part) for part in first[3]]}


@case("Tensor.multinomial", "torch.multinomial")
def multinomial_draws_without_replacement_by_default(torch: Any) -> Any:
    """PyTorch's default is without replacement (MindSpore's own Tensor.multinomial drew with it, repeating indices);
    with replacement, a certain category is drawn every time; a generator replays."""
    torch.manual_seed(5)
    weights = torch.ones(40)
    drawn = weights.multinomial(40)
    rows = torch.ones(3, 12).multinomial(12)
    generator = torch.Generator().manual_seed(3)
    first = weights.multinomial(10, generator=generator)
    generator.manual_seed(3)
    return {"method_distinct": len(set(drawn.tolist())), "rows_distinct": [len(set(r)) for r in rows.tolist()],
            "function_distinct": len(set(torch.multinomial(weights, 40).tolist())),
            "certain_with_replacement": torch.tensor([0.0, 1.0, 0.0]).multinomial(6, True).tolist(),
            "dtype": drawn.dtype, "generator_replays": torch.equal(first, weights.multinomial(10, generator=generator))}
