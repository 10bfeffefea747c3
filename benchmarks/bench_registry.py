"""Benchmark the core engine against the per-patch sweep that MindSpeed's patch manager does.

Prints, in one run:
  (a) apply() of N patches with M synthetic modules loaded, against a baseline that, per patch,
      sets the attribute and then loops over a copy of sys.modules with hasattr/getattr/id
      comparison (what MindSpeed's ``Patch.apply_patch`` does); the same final state is checked.
      Two workloads: every target with a name of its own, and targets sharing a few names
      (``forward``, ``__init__``, ``a7``... in many modules, each module also binding those names
      to functions of its own), where a per-name scan of the targets would cost bindings x targets;
  (a'') the shape where many modules share names (issue 23): 3,000 modules each defining the same 50
      function names, 500 targets spread over them, every sixth module holding a ``from``-import of
      a target, against the stand-in of MindSpeed's manager (``tests/fakes/mindspeed/patch_utils.py``,
      its ``register_patch`` + ``apply_patches``); the same final state is checked;
  (b) the per-call cost of a replaced function against calling the replacement directly;
  (c) importing 1,000 unrelated modules with 500 hooks armed against none.

Run: ``python benchmarks/bench_registry.py`` (``--quick`` for a smaller, faster run; ``--pure-python`` runs the
alias pass without its C accelerator, ``mindspeed_ms.engine._identity``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import statistics
import sys
import tempfile
import time
import timeit
import types
from pathlib import Path
from typing import Callable

from mindspeed_ms import PatchRegistry
from mindspeed_ms.engine import aliases

PREFIX = "bench_synth"
#: The stand-in of MindSpeed 2.2.0's ``mindspeed.patch_utils`` (its algorithm, our code).
STAND_IN = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "mindspeed" / "patch_utils.py"


SHARED_NAMES = ("forward", "__init__", "a7", "step", "helper")


def build_modules(n_modules: int, n_targets: int, attrs: int, shared: bool = False) -> tuple[list, list]:
    """Create target modules and filler modules (some holding aliases of targets) in sys.modules.

    With ``shared``, targets are named from :data:`SHARED_NAMES` (one of each per target module) and
    every filler binds those names to functions of its own, as real code does.
    """
    targets_per_module = len(SHARED_NAMES) if shared else 10
    target_modules = []
    originals = []
    for t in range(0, n_targets, targets_per_module):
        module = types.ModuleType(f"{PREFIX}_target_{t // targets_per_module}")
        for i in range(t, min(t + targets_per_module, n_targets)):
            name = SHARED_NAMES[i - t] if shared else f"target_fn_{i}"
            exec(f"def {name}(x):\n    return x + {i}\n", module.__dict__)
            originals.append((module, name))
        sys.modules[module.__name__] = module
        target_modules.append(module)
    fillers = []
    for m in range(n_modules - len(target_modules)):
        module = types.ModuleType(f"{PREFIX}_filler_{m}")
        namespace = module.__dict__
        for a in range(attrs):
            kind = a % 5
            if kind == 0:
                namespace[f"attr_{a}"] = a
            elif kind == 1:
                namespace[f"name_{a}"] = f"s{a}"
            elif kind == 2:
                namespace[f"fn_{a}"] = len
            elif kind == 3:
                namespace[f"obj_{a}"] = object()
            else:
                namespace[f"none_{a}"] = None
        if shared:
            for name in SHARED_NAMES:
                exec(f"def {name}(x):\n    return x\n", namespace)
        # every 3rd filler holds a from-imported alias of some target, like `from x import target_fn_i`
        if m % 3 == 0 and originals:
            owner, name = originals[(m * 7) % len(originals)]
            namespace[name] = owner.__dict__[name]
        sys.modules[module.__name__] = module
        fillers.append(module)
    return target_modules, originals


def make_replacements(originals: list) -> dict:
    replacements = {}
    for owner, name in originals:
        def replacement(x, _name=name):
            return x
        replacement.__name__ = name
        replacements[(owner.__name__, name)] = replacement
    return replacements


def snapshot() -> dict:
    return {name: dict(module.__dict__) for name, module in sys.modules.items() if name.startswith(PREFIX)}


def restore(saved: dict) -> None:
    for name, namespace in saved.items():
        module = sys.modules[name]
        module.__dict__.clear()
        module.__dict__.update(namespace)


def baseline_apply(originals: list, replacements: dict) -> None:
    """MindSpeed's way: setattr, then one sweep of a copy of sys.modules per patch."""
    for owner, name in originals:
        original = getattr(owner, name)
        new = replacements[(owner.__name__, name)]
        setattr(owner, name, new)
        for _, value in sys.modules.copy().items():
            if hasattr(value, name) and id(getattr(value, name)) == id(original):
                setattr(value, name, new)


def timed(func: Callable[[], None], setup: Callable[[], None], runs: int) -> float:
    samples = []
    for _ in range(runs):
        setup()
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
        gc.enable()
    return statistics.median(samples)


def bench_apply(n_modules: int, n_targets: int, attrs: int, runs: int, shared: bool = False) -> None:
    _, originals = build_modules(n_modules, n_targets, attrs, shared)
    replacements = make_replacements(originals)
    bindings = sum(len(m.__dict__) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType))
    pristine = snapshot()

    baseline_state: dict = {}

    def run_baseline() -> None:
        baseline_apply(originals, replacements)

    base = timed(run_baseline, lambda: restore(pristine), runs)
    baseline_state.update(snapshot())
    restore(pristine)

    registry = PatchRegistry("bench")
    for owner, name in originals:
        registry.register(f"{owner.__name__}.{name}", replacements[(owner.__name__, name)])

    def setup_ours() -> None:
        registry.revert()
        restore(pristine)

    ours = timed(registry.apply, setup_ours, runs)
    ours_state = snapshot()
    same = ours_state.keys() == baseline_state.keys() and all(
        ours_state[k].keys() == baseline_state[k].keys()
        and all(ours_state[k][a] is baseline_state[k][a] for a in ours_state[k]) for k in ours_state)
    registry.revert()
    restored = all(sys.modules[k].__dict__.get(a) is v for k, ns in pristine.items() for a, v in ns.items())
    workload = (f"targets sharing {len(SHARED_NAMES)} names ({n_targets // len(SHARED_NAMES)} targets per name)"
                if shared else "unique target names")
    print(f"(a) apply() of {n_targets} patches, {workload}, {n_modules} synthetic modules, {bindings:,} "
          f"module-level bindings in sys.modules")
    print(f"    baseline (setattr + sys.modules sweep per patch): {base * 1e3:9.2f} ms  (median of {runs})")
    print(f"    mindspeed_ms PatchRegistry.apply():               {ours * 1e3:9.2f} ms  (median of {runs})")
    print(f"    ratio: {base / ours:.1f}x faster; same final state: {same}; revert restores all: {restored}")
    for name in [n for n in sys.modules if n.startswith(PREFIX)]:
        del sys.modules[name]


def build_shared_shape(n_modules: int, n_names: int, n_targets: int, alias_every: int) -> list:
    """Create ``n_modules`` modules each defining the same ``n_names`` functions; return the targets.

    The targets are spread over the modules (one every ``n_modules // n_targets``); every
    ``alias_every``-th module binds one target under its name (``from owner import name``).
    """
    names = [f"fn_{i}" for i in range(n_names)]
    source = "".join(f"def {name}(x):\n    return x + {i}\n" for i, name in enumerate(names))
    code = compile(source, "<bench>", "exec")
    modules = []
    for m in range(n_modules):
        module = types.ModuleType(f"{PREFIX}_shape_{m}")
        exec(code, module.__dict__)
        sys.modules[module.__name__] = module
        modules.append(module)
    step = max(1, n_modules // n_targets)
    targets = [(modules[(k * step) % n_modules], names[k % n_names]) for k in range(n_targets)]
    for m in range(alias_every // 2, n_modules, alias_every):
        owner, name = targets[(m * 7) % n_targets]
        if modules[m] is not owner:
            modules[m].__dict__[name] = owner.__dict__[name]
    return targets


def _stand_in_manager() -> type:
    spec = importlib.util.spec_from_file_location("bench_stand_in_patch_utils", STAND_IN)
    if spec is None or spec.loader is None:  # pragma: no cover - the file is in the repository
        raise FileNotFoundError(STAND_IN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manager: type = module.MindSpeedPatchesManager
    return manager


def bench_shared_shape(n_modules: int, n_names: int, n_targets: int, alias_every: int, runs: int) -> None:
    """(a''): runs of the stand-in and of ours alternate, so that a loaded machine weighs on both alike."""
    targets = build_shared_shape(n_modules, n_names, n_targets, alias_every)
    replacements = make_replacements(targets)
    wanted = {name for _, name in targets}
    bindings = sum(len(m.__dict__) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType))
    with_wanted = sum(len(wanted.intersection(m.__dict__)) for m in list(sys.modules.values())
                      if isinstance(m, types.ModuleType))
    pristine = snapshot()
    registry = PatchRegistry("bench-shape")
    for owner, name in targets:
        registry.register(f"{owner.__name__}.{name}", replacements[(owner.__name__, name)])
    manager: list[type] = []

    def setup_stand_in() -> None:
        registry.revert()
        restore(pristine)
        manager[:] = [_stand_in_manager()]
        for owner, name in targets:
            manager[0].register_patch(f"{owner.__name__}.{name}",  # type: ignore[attr-defined]
                                      replacements[(owner.__name__, name)])

    def setup_ours() -> None:
        registry.revert()
        restore(pristine)

    sides: dict[str, tuple[Callable[[], None], Callable[[], object]]] = {
        "stand-in": (setup_stand_in, lambda: manager[0].apply_patches()),  # type: ignore[attr-defined]
        "ours": (setup_ours, registry.apply),
    }
    wall: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    final: dict[str, dict] = {}
    for _ in range(runs):
        for side, (setup, run) in sides.items():
            setup()
            gc.collect()
            gc.disable()
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            cpu[side].append(time.process_time() - start_cpu)
            wall[side].append(time.perf_counter() - start)
            gc.enable()
            final[side] = snapshot()
    ours_state, baseline_state = final["ours"], final["stand-in"]
    same = ours_state.keys() == baseline_state.keys() and all(
        ours_state[k].keys() == baseline_state[k].keys()
        and all(ours_state[k][a] is baseline_state[k][a] for a in ours_state[k]) for k in ours_state)
    registry.apply()
    registry.revert()
    restored = all(sys.modules[k].__dict__.get(a) is v for k, ns in pristine.items() for a, v in ns.items())
    print(f"(a'') apply() of {n_targets} patches, {n_modules} modules each defining the same {n_names} function "
          f"names, every {alias_every}th holding a from-import of a target ({bindings:,} module-level bindings, "
          f"{with_wanted:,} with a wanted name); runs alternate, median of {runs}")
    base, ours = statistics.median(wall["stand-in"]), statistics.median(wall["ours"])
    base_cpu, ours_cpu = statistics.median(cpu["stand-in"]), statistics.median(cpu["ours"])
    print(f"    MindSpeed's manager (stand-in, register_patch + apply_patches): {base * 1e3:9.2f} ms wall "
          f"{base_cpu * 1e3:9.2f} ms CPU")
    print(f"    mindspeed_ms PatchRegistry.apply():                             {ours * 1e3:9.2f} ms wall "
          f"{ours_cpu * 1e3:9.2f} ms CPU")
    print(f"    ratio: {base / ours:.1f}x faster (wall), {base_cpu / ours_cpu:.1f}x (CPU); same final state: {same}; "
          f"revert restores all: {restored}")
    for name in [n for n in sys.modules if n.startswith(PREFIX)]:
        del sys.modules[name]


def bench_call(number: int) -> None:
    module = types.ModuleType(f"{PREFIX}_call")
    exec("def func(x):\n    return x\n", module.__dict__)
    sys.modules[module.__name__] = module

    def replacement(x):
        return x + 1

    registry = PatchRegistry("bench-call")
    registry.register(f"{module.__name__}.func", replacement)
    registry.apply()
    patched = module.func
    direct = min(timeit.repeat(lambda: replacement(1), number=number, repeat=7))
    through = min(timeit.repeat(lambda: patched(1), number=number, repeat=7))
    print(f"(b) per call: replacement called directly {direct / number * 1e9:6.1f} ns, through the patched "
          f"name {through / number * 1e9:6.1f} ns; ratio {through / direct:.2f}x "
          f"(installed object is the replacement: {patched is replacement})")
    registry.revert()
    del sys.modules[module.__name__]


def bench_imports(n_imports: int, n_hooks: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(n_imports):
            (root / f"{PREFIX}_imp_{i}.py").write_text(f"VALUE = {i}\ndef f():\n    return VALUE\n")
        sys.path.insert(0, tmp)
        importlib.invalidate_caches()
        names = [f"{PREFIX}_imp_{i}" for i in range(n_imports)]

        def import_all() -> None:
            for name in names:
                importlib.import_module(name)

        def clear() -> None:
            for name in names:
                sys.modules.pop(name, None)

        import_all()  # warm the file-system caches and bytecode
        registry = PatchRegistry("bench-hooks")
        for i in range(n_hooks):
            # armed hooks on modules that exist but are never imported here
            (root / f"{PREFIX}_hooked_{i}.py").write_text("def f():\n    return 0\n")
            registry.register(f"{PREFIX}_hooked_{i}.f", lambda: 1)
        importlib.invalidate_caches()
        samples_none, samples_hooked = [], []
        for _ in range(runs):  # interleaved, so drift hits both alike
            clear()
            samples_none.append(timed(import_all, clear, 1))
            registry.apply()
            samples_hooked.append(timed(import_all, clear, 1))
            registry.revert()
        none, hooked = statistics.median(samples_none), statistics.median(samples_hooked)
        print(f"(c) importing {n_imports} unrelated modules: no hooks {none * 1e3:.1f} ms, {n_hooks} hooks armed "
              f"{hooked * 1e3:.1f} ms; ratio {hooked / none:.3f}x (median of {runs})")
        clear()
        sys.path.remove(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs")
    parser.add_argument("--pure-python", action="store_true", help="the alias pass without its C accelerator")
    args = parser.parse_args(argv)
    with aliases.accelerator(aliases.has_accelerator() and not args.pure_python):
        print(f"alias pass: {'C accelerator' if aliases.is_accelerated() else 'pure Python'}")
        run(args.quick)
    return 0


def run(quick: bool) -> None:
    if quick:
        bench_apply(600, 100, 50, 3)
        bench_apply(600, 100, 50, 3, shared=True)
        bench_shared_shape(600, 50, 100, 6, 3)
        bench_call(200_000)
        bench_imports(200, 500, 3)
    else:
        bench_apply(3000, 500, 50, 7)
        bench_apply(3000, 500, 50, 7, shared=True)
        bench_shared_shape(3000, 50, 500, 6, 7)
        bench_call(1_000_000)
        bench_imports(1000, 500, 7)


if __name__ == "__main__":
    sys.exit(main())
