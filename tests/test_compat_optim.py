"""mindspeed_ms.compat.optim: MSAdapter's Adam/AdamW follow PyTorch's documented update rule.

Importing msadapter changes MindSpore's Tensor class for the whole process, so the optimizers run
in one fresh interpreter (``_WORKER``) per test module: first MSAdapter's own ``step``, then the
built-in ``msadapter`` provider is applied through a fresh :class:`~mindspeed_ms.PatchRegistry`,
every scenario runs through ``torch.optim``, and the registry is reverted. The reference is a
NumPy transcription of the algorithm in the torch.optim.Adam/AdamW documentation, computed here.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

STEPS = 20
BETAS = (0.9, 0.999)
EPS = 1e-8
#: Two parameter groups with different learning rates: (parameter names, lr).
GROUPS = ((("w", "b"), 1e-2), (("u",), 3e-3))
SHAPES = {"w": (4, 5), "b": (7,), "u": (3, 3)}
#: Relative deviation allowed against the reference: float32 rounding over 20 steps (real PyTorch
#: 2.13 on CPU reaches 5.3e-7 on these inputs; MSAdapter's own step 6.7e-4).
RTOL = 1e-6

SCENARIOS = [
    {"name": f"{cls}{'-amsgrad' * amsgrad}{'-maximize' * maximize}{'-wd' * bool(wd)}", "cls": cls,
     "amsgrad": amsgrad, "maximize": maximize, "weight_decay": wd}
    for cls, amsgrad, maximize, wd in itertools.product(("Adam", "AdamW"), (False, True), (False, True), (0.0, 0.1))
]
#: The scenarios MSAdapter's unpatched step runs too (to show that the comparison can fail).
UNPATCHED = ("Adam", "AdamW-wd")

_WORKER = textwrap.dedent('''
    import json
    import sys

    import numpy as np
    import msadapter
    import torch

    from mindspeed_ms import PatchRegistry
    from mindspeed_ms.compat import optim as compat
    from mindspeed_ms.patches import msadapter as provider

    inputs = dict(np.load(sys.argv[1]))
    config = json.loads(open(sys.argv[2]).read())
    groups, steps = config["groups"], config["steps"]
    arrays, facts = {}, {}


    def parameters(prefix="init"):
        return {name: torch.nn.Parameter(torch.tensor(inputs[f"{prefix}/{name}"]))
                for names, _ in groups for name in names}


    def optimizer(params, scenario, **options):
        cls = getattr(torch.optim, scenario["cls"])
        param_groups = [{"params": [params[name] for name in names], "lr": lr} for names, lr in groups]
        return cls(param_groups, amsgrad=scenario["amsgrad"], maximize=scenario["maximize"],
                   weight_decay=scenario["weight_decay"], **options)


    def train(params, opt, first, last):
        for t in range(first, last):
            for name, param in params.items():
                param.grad = torch.tensor(inputs[f"grad/{t}/{name}"])
            opt.step()
        return {name: param.asnumpy() for name, param in params.items()}


    def run(scenario, **options):
        params = parameters()
        return train(params, optimizer(params, scenario, **options), 0, steps)


    by_name = {scenario["name"]: scenario for scenario in config["scenarios"]}
    originals = {cls: (cls.__init__, cls.step, cls.__setstate__) for cls in (torch.optim.Adam, torch.optim.AdamW)}
    for name in config["unpatched"]:
        for key, value in run(by_name[name]).items():
            arrays[f"unpatched/{name}/{key}"] = value
    msadapter_params = parameters()
    msadapter_opt = optimizer(msadapter_params, by_name["Adam"])
    train(msadapter_params, msadapter_opt, 0, 3)
    msadapter_saved = msadapter_opt.state_dict()

    from mindspore import mint
    rng = np.random.default_rng(5)
    start, end = (torch.tensor(rng.standard_normal(100_000).astype(np.float32) * 1e-3) for _ in range(2))
    a, b = start.asnumpy(), end.asnumpy()
    facts["lerp_bit_identical"] = {
        str(weight): bool(np.array_equal(compat.lerp(start, end, weight).asnumpy(), expected))
        for weight, expected in ((0.1, mint.lerp(start, end, 0.1).asnumpy()),
                                 (0.001, mint.lerp(start, end, 0.001).asnumpy()),
                                 (0.5, b - (b - a) * np.float32(0.5)), (0.75, b - (b - a) * np.float32(0.25)))}

    registry = PatchRegistry("optim-test")
    with registry.provider("msadapter"):
        provider.register(registry, None)
    report = registry.apply()
    facts["failed"] = report.failed
    facts["resolves"] = {
        "torch.optim.Adam.step": torch.optim.Adam.step is compat.adam_step,
        "torch.optim.AdamW.step": torch.optim.AdamW.step is compat.adamw_step,
        "torch.optim.Adam.__init__": torch.optim.Adam.__init__ is compat.adam_init,
        "torch.optim.AdamW.__init__": torch.optim.AdamW.__init__ is compat.adamw_init,
        "msadapter.optim.AdamW.step": msadapter.optim.AdamW.step is compat.adamw_step,
    }
    try:
        for scenario in config["scenarios"]:
            for key, value in run(scenario).items():
                arrays[f"patched/{scenario['name']}/{key}"] = value

        # state_dict after 10 steps, loaded into a fresh optimizer over the 10-step weights, 10 more steps.
        scenario = by_name["AdamW-amsgrad-wd"]
        params = parameters()
        opt = optimizer(params, scenario)
        halfway = train(params, opt, 0, steps // 2)
        saved = opt.state_dict()
        for key, value in halfway.items():
            inputs[f"half/{key}"] = value
        resumed_params = parameters("half")
        resumed = optimizer(resumed_params, scenario)
        resumed.load_state_dict(saved)
        for key, value in train(resumed_params, resumed, steps // 2, steps).items():
            arrays[f"resumed/{key}"] = value
        state = resumed.state[resumed_params["w"]]
        facts["state_keys"] = sorted(state)
        facts["step_type"] = type(state["step"]).__name__
        facts["step_value"] = state["step"].item()
        facts["saved_step_type"] = type(saved["state"][0]["step"]).__name__

        # A state dict MSAdapter saved (int step, groups without PyTorch's options) loads and continues.
        params = parameters()
        opt = optimizer(params, by_name["Adam"])
        opt.load_state_dict(msadapter_saved)
        train(params, opt, 3, 4)
        facts["msadapter_state_step"] = opt.state[params["w"]]["step"].item()

        # PyTorch's implementation switches give the same update.
        plain = arrays["patched/AdamW-amsgrad-wd/w"]
        facts["options"] = {
            text: float(np.max(np.abs(run(scenario, **options)["w"] - plain)))
            for text, options in (("foreach=True", {"foreach": True}), ("fused=True", {"fused": True}),
                                  ("capturable=True", {"capturable": True}))
        }
        try:
            optimizer(parameters(), scenario, differentiable=True)
            facts["differentiable"] = None
        except Exception as error:
            facts["differentiable"] = [cls.__name__ for cls in type(error).__mro__]
        try:
            optimizer(parameters(), scenario, foreach=True, fused=True)
            facts["foreach_and_fused"] = None
        except RuntimeError as error:
            facts["foreach_and_fused"] = str(error)

        # A parameter without a gradient is skipped; the closure's loss is returned.
        frozen = torch.nn.Parameter(torch.tensor(inputs["init/b"]))
        live = torch.nn.Parameter(torch.tensor(inputs["init/w"]))
        opt = torch.optim.Adam([frozen, live], lr=0.1)
        live.grad = torch.tensor(inputs["grad/0/w"])
        facts["closure_loss"] = opt.step(lambda: 7.0)
        facts["frozen_unchanged"] = bool(np.array_equal(frozen.asnumpy(), inputs["init/b"]))
        facts["frozen_has_state"] = len(opt.state[frozen]) > 0
        facts["live_changed"] = not np.array_equal(live.asnumpy(), inputs["init/w"])
    finally:
        registry.revert()
    facts["reverted"] = all((cls.__init__, cls.step, cls.__setstate__) == saved
                            for cls, saved in originals.items())
    np.savez(sys.argv[3], **arrays)
    print("FACTS " + json.dumps(facts))
''')


def _inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = {f"init/{name}": rng.standard_normal(shape).astype(np.float32) for name, shape in SHAPES.items()}
    for t in range(STEPS):
        for name, shape in SHAPES.items():
            # Gradients over six orders of magnitude: where sqrt(v) nears eps, where eps goes matters.
            scale = 10.0 ** rng.uniform(-6, 0, shape)
            inputs[f"grad/{t}/{name}"] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return inputs


def _reference(inputs: dict[str, np.ndarray], scenario: dict[str, Any], steps: int = STEPS) -> dict[str, np.ndarray]:
    """Apply PyTorch's documented Adam/AdamW algorithm, literally as written in its docs, in float64."""
    beta1, beta2 = BETAS
    wd = scenario["weight_decay"]
    decoupled = scenario["cls"] == "AdamW"
    result = {}
    for names, lr in GROUPS:
        for name in names:
            theta = inputs[f"init/{name}"].astype(np.float64)
            m = np.zeros_like(theta)
            v = np.zeros_like(theta)
            v_max = np.zeros_like(theta)
            for t in range(1, steps + 1):
                g = inputs[f"grad/{t - 1}/{name}"].astype(np.float64)
                if scenario["maximize"]:
                    g = -g
                if wd and decoupled:
                    theta = theta - lr * wd * theta
                elif wd:
                    g = g + wd * theta
                m = beta1 * m + (1 - beta1) * g
                v = beta2 * v + (1 - beta2) * g * g
                m_hat = m / (1 - beta1 ** t)
                if scenario["amsgrad"]:
                    v_max = np.maximum(v_max, v)
                    v_hat = v_max / (1 - beta2 ** t)
                else:
                    v_hat = v / (1 - beta2 ** t)
                theta = theta - lr * m_hat / (np.sqrt(v_hat) + EPS)
            result[name] = theta
    return result


def _deviation(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> float:
    """Largest max|actual - expected| / max|expected| over the parameters (float32 noise is ~1e-7)."""
    return max(float(np.max(np.abs(actual[name] - expected[name])) / np.max(np.abs(expected[name])))
               for name in expected)


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, np.ndarray], dict]:
    root = tmp_path_factory.mktemp("optim")
    inputs = _inputs()
    np.savez(root / "inputs.npz", **inputs)
    config = {"groups": GROUPS, "steps": STEPS, "scenarios": SCENARIOS, "unpatched": UNPATCHED}
    (root / "config.json").write_text(json.dumps(config))
    script = root / "worker.py"
    script.write_text(_WORKER)
    proc = subprocess.run([sys.executable, str(script), str(root / "inputs.npz"), str(root / "config.json"),
                           str(root / "out.npz")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-4000:]}"
    line = next(line for line in proc.stdout.splitlines() if line.startswith("FACTS "))
    facts = json.loads(line[len("FACTS "):])
    with np.load(root / "out.npz") as out:
        arrays = dict(out)
    return facts, arrays, inputs


def _results(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {name: arrays[f"{prefix}/{name}"] for name in SHAPES}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario["name"] for scenario in SCENARIOS])
def test_patched_step_follows_pytorch_documented_rule_over_20_steps(worker: tuple, scenario: dict) -> None:
    facts, arrays, inputs = worker
    deviation = _deviation(_results(arrays, f"patched/{scenario['name']}"), _reference(inputs, scenario))
    assert deviation <= RTOL, f"{scenario['name']}: max relative deviation {deviation:.2e}"


@pytest.mark.parametrize("name", UNPATCHED)
def test_unpatched_msadapter_step_deviates_from_pytorch_rule(worker: tuple, name: str) -> None:
    facts, arrays, inputs = worker
    scenario = next(scenario for scenario in SCENARIOS if scenario["name"] == name)
    deviation = _deviation(_results(arrays, f"unpatched/{name}"), _reference(inputs, scenario))
    assert deviation > 100 * RTOL, f"{name}: MSAdapter's own step deviates only {deviation:.2e}"


def test_lerp_of_the_update_is_bit_identical_to_mint_lerp(worker: tuple) -> None:
    """compat.optim.lerp (the moment update, from fast kernels) gives mint.lerp's values bit for bit for weights
    below 0.5 (Adam's 1 - beta1); from 0.5 on PyTorch's second form, end - (end - start) * (1 - weight), which
    mint.lerp does not use."""
    facts, _, _ = worker
    assert facts["lerp_bit_identical"] == {"0.1": True, "0.001": True, "0.5": True, "0.75": True}


def test_provider_patches_torch_optim_through_the_registry_and_reverts(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["failed"] == 0
    assert all(facts["resolves"].values()), facts["resolves"]
    assert facts["reverted"]


def test_state_keeps_pytorch_layout_with_a_tensor_step(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["state_keys"] == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert facts["step_type"] == facts["saved_step_type"] == "Tensor"
    assert facts["step_value"] == STEPS


def test_load_state_dict_resumes_exactly_where_training_stopped(worker: tuple) -> None:
    _, arrays, _ = worker
    straight = _results(arrays, "patched/AdamW-amsgrad-wd")
    for name, value in _results(arrays, "resumed").items():
        np.testing.assert_array_equal(value, straight[name], err_msg=name)


def test_load_state_dict_accepts_a_state_dict_msadapter_saved(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["msadapter_state_step"] == 4


def test_foreach_fused_and_capturable_are_accepted_and_give_the_same_update(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["options"] == {"foreach=True": 0.0, "fused=True": 0.0, "capturable=True": 0.0}


def test_foreach_with_fused_is_rejected_as_pytorch_rejects_it(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["foreach_and_fused"] == "`fused` and `foreach` cannot be `True` together."


def test_differentiable_raises_a_typed_not_implemented_error(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["differentiable"] is not None
    assert {"UnsupportedOptimizerFeatureError", "AdaptationError", "NotImplementedError"} <= set(
        facts["differentiable"])


def test_parameters_without_gradient_are_skipped_and_the_closure_loss_returned(worker: tuple) -> None:
    facts, _, _ = worker
    assert facts["closure_loss"] == 7.0
    assert facts["frozen_unchanged"]
    assert not facts["frozen_has_state"]
    assert facts["live_changed"]


def test_reference_takes_one_step_of_lr_times_sign_of_the_gradient() -> None:
    # From zero state PyTorch's first update is lr * g / (|g| + eps), whatever |g| is: a closed form
    # that checks the reference itself (MSAdapter's eps-before-bias-correction gives lr * g / (|g| + 32 eps)).
    inputs = _inputs()
    scenario = {"cls": "Adam", "amsgrad": False, "maximize": False, "weight_decay": 0.0}
    g = inputs["grad/0/u"].astype(np.float64)
    expected = inputs["init/u"] - 3e-3 * g / (np.abs(g) + EPS)
    np.testing.assert_allclose(_reference(inputs, scenario, steps=1)["u"], expected, rtol=1e-12)
