"""MindSpeed's manager semantics, side by side: the stand-in of ``mindspeed.patch_utils`` and ours, same calls.

Each scenario runs twice on fresh copies of the same throwaway modules: once with the stand-in
(``tests/fakes/mindspeed/patch_utils.py``, shaped exactly like MindSpeed 2.2.0's manager: class-level
``patches_info``, ``set_patch_func``'s conflict rule, ``parse_path`` creating dummies) and once with
:func:`mindspeed_ms.patch_manager.bind_manager` on a fresh registry. The observable outcomes (what
the patched names return, which registration raised a conflict) must be equal.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from _helpers import ROOT, subprocess_env

from mindspeed_ms import PatchRegistry
from mindspeed_ms.errors import PatchConflictError
from mindspeed_ms.patch_manager import bind_manager

STAND_IN = ROOT / "tests" / "fakes" / "mindspeed" / "patch_utils.py"

SOURCE = """
def f(x):
    return ("orig", x)

class C:
    def m(self):
        return "m"
"""
SUB_SOURCE = """
from {base} import C

class D(C):
    pass
"""

Scenario = Callable[[Any, str], Any]


def rep(x: Any) -> Any:
    return ("rep", x)


def trace_wrapper(fn: Any) -> Any:
    def inner(*args: Any) -> Any:
        return ("wrapped", fn(*args) if fn is not None else "no function")

    return inner


def _stand_in_manager() -> Any:
    spec = importlib.util.spec_from_file_location(f"stand_in_patch_utils_{uuid.uuid4().hex[:8]}", STAND_IN)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MindSpeedPatchesManager


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except PatchConflictError:
        return "conflict"
    except RuntimeError as error:  # MindSpeed's conflict and its dummy functions
        return "conflict" if "exist !" in str(error) else "raises"
    except (NotImplementedError, TypeError):  # our placeholder; MindSpeed's wrapped None
        return "raises"


@pytest.fixture
def side_by_side(modules: Any) -> Iterator[Callable[[Scenario], tuple[Any, Any]]]:
    before = set(sys.modules)
    registries: list[PatchRegistry] = []

    def run(scenario: Scenario) -> tuple[Any, Any]:
        results = []
        for manager in (_stand_in_manager(), None):
            name = f"pmv_{uuid.uuid4().hex[:8]}"
            modules.write(name, SOURCE)
            modules.write(f"{name}_sub", SUB_SOURCE.format(base=name))
            importlib.import_module(name)
            if manager is None:
                registries.append(PatchRegistry("side-by-side"))
                manager = bind_manager(registries[-1])
            results.append(scenario(manager, name))
        return results[0], results[1]

    yield run
    for registry in registries:
        registry.revert()
    for name in set(sys.modules) - before:
        if name.startswith("pmv_"):
            del sys.modules[name]


def test_remove_patches_keeps_the_keys_of_patches_info(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}.f", rep)
        manager.register_patch(f"{name}.f", trace_wrapper)
        manager.apply_patches()
        manager.remove_patches()
        patch = manager.patches_info[f"{name}.f"]
        state = (list(manager.patches_info) == [f"{name}.f"], patch.patch_func, list(patch.wrappers),
                 patch.is_applied, sys.modules[name].f(1))
        manager.register_patch(f"{name}.f", rep)  # no conflict: the replacement was removed
        manager.apply_patches()
        return state, sys.modules[name].f(2)

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == ((True, None, [], False, ("orig", 1)), ("rep", 2))
    assert ours == mindspeed


def test_forcing_none_over_a_replacement_brings_the_original_back_under_the_wrappers(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}.f", rep)
        manager.register_patch(f"{name}.f", trace_wrapper)
        manager.apply_patches()
        manager.register_patch(f"{name}.f", None, force_patch=True)
        manager.apply_patches()
        return sys.modules[name].f(1), manager.patches_info[f"{name}.f"].patch_func

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == (("wrapped", ("orig", 1)), None)
    assert ours == mindspeed


def test_forcing_none_over_a_placeholder_brings_the_original_back(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}.f", None)
        manager.register_patch(f"{name}.f", None, force_patch=True)
        manager.apply_patches()
        return sys.modules[name].f(1)

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == ("orig", 1)
    assert ours == mindspeed


@pytest.mark.parametrize("order", ["placeholder first", "replacement first"])
def test_a_placeholder_and_a_replacement_conflict_without_force_patch(side_by_side: Any, order: str) -> None:
    def scenario(manager: Any, name: str) -> Any:
        first, second = (None, rep) if order == "placeholder first" else (rep, None)
        manager.register_patch(f"{name}.f", first)
        conflict = _outcome(lambda: manager.register_patch(f"{name}.f", second))
        manager.apply_patches()
        return conflict, _outcome(lambda: sys.modules[name].f(1))

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed[0] == "conflict"
    assert ours == mindspeed


def test_a_wrapper_with_create_dummy_on_a_missing_attribute_wraps_a_dummy(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        for target in (f"{name}.missing", f"{name}.C.missing", f"{name}_nomod.sub.g"):
            manager.register_patch(target, trace_wrapper, create_dummy=True)
        manager.apply_patches()
        module = sys.modules[name]
        return [callable(module.missing), callable(module.C.missing), callable(sys.modules[f"{name}_nomod.sub"].g),
                _outcome(lambda: module.C.missing(1))]

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == [True, True, True, "raises"]
    assert ours == mindspeed


def test_a_wrap_on_an_inherited_method_armed_until_import_is_not_stacked_on_the_bases(side_by_side: Any) -> None:
    # MindSpeed registers Parameter.type, then Tensor.type, with one type_wrapper (Parameter inherits it).
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}_sub.D.m", trace_wrapper)
        manager.register_patch(f"{name}.C.m", trace_wrapper)
        manager.apply_patches()  # MindSpeed imports the subclass's module now; ours waits for its import
        sub = importlib.import_module(f"{name}_sub")
        return sub.D().m(), sub.C().m()

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == (("wrapped", "m"), ("wrapped", "m"))
    assert ours == mindspeed


def test_a_base_wrapped_before_the_subclass_is_registered_stays_under_it_as_in_mindspeed(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}.C.m", trace_wrapper)
        manager.register_patch(f"{name}_sub.D.m", trace_wrapper)
        manager.apply_patches()
        sub = importlib.import_module(f"{name}_sub")
        return sub.D().m(), sub.C().m()

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == (("wrapped", ("wrapped", "m")), ("wrapped", "m"))
    assert ours == mindspeed


def test_a_top_level_dummy_module_imports(side_by_side: Any) -> None:
    def scenario(manager: Any, name: str) -> Any:
        manager.register_patch(f"{name}_cuda_ext", create_dummy=True)  # MindSpeed: 'fused_layer_norm_cuda'
        manager.apply_patches()
        module = importlib.import_module(f"{name}_cuda_ext")
        return type(module).__name__, importlib.util.find_spec(f"{name}_cuda_ext") is not None

    mindspeed, ours = side_by_side(scenario)
    assert mindspeed == ("module", True)
    assert ours == mindspeed


def test_the_dummy_module_goes_away_on_revert(modules: Any) -> None:
    registry = PatchRegistry("dummy")
    manager = bind_manager(registry)
    manager.register_patch("pmv_dummy_top", create_dummy=True)
    manager.apply_patches()
    [status] = registry.status()
    assert (status.state, status.stub) == ("applied", True)
    assert importlib.import_module("pmv_dummy_top").__name__ == "pmv_dummy_top"
    registry.revert()
    assert "pmv_dummy_top" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pmv_dummy_top")


def test_mindspeeds_type_wrapper_wraps_msadapters_parameter_type_once(tmp_path: Path) -> None:
    # The real case: MindSpeed's requirements_basic registers Parameter.type, then Tensor.type; under
    # MSAdapter, torch.nn.parameter is imported after apply (by megatron), so ours waits for it.
    script = textwrap.dedent("""
        import json
        import msadapter, torch
        from mindspeed_ms import PatchRegistry
        from mindspeed_ms.patch_manager import bind_manager
        calls = []
        def type_wrapper(fn):
            def wrapper(*args, **kwargs):
                calls.append(1)
                return fn(*args, **kwargs)
            return wrapper
        registry = PatchRegistry("type")
        manager = bind_manager(registry)
        manager.register_patch("torch.nn.parameter.Parameter.type", type_wrapper)
        manager.register_patch("torch.Tensor.type", type_wrapper)
        manager.apply_patches()
        from torch.nn.parameter import Parameter
        Parameter(torch.ones(2)).type()
        on_parameter = len(calls)
        calls.clear()
        torch.ones(2).type()
        print(json.dumps([on_parameter, len(calls)]))
    """)
    env = subprocess_env(PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[1, 1]"


def test_every_register_spelling_defaults_as_mindspeeds_manager() -> None:
    # MindSpeed's register_patch(orig_func_name, new_func=None, force_patch=False, create_dummy=False) is the
    # reference; MindSporeAdaptation.register differs on purpose (force_patch=True, as MindSpeed-LLM's).
    import inspect

    from mindspeed_ms.patch_manager.binding import ManagerBinding
    from mindspeed_ms.patch_manager.patch import MindSpeedPatch

    def defaults(function: Callable[..., Any], *names: str) -> dict[str, Any]:
        parameters = inspect.signature(function).parameters
        return {name: parameters[name].default for name in names}

    theirs = defaults(_stand_in_manager().register_patch, "new_func", "force_patch", "create_dummy")
    assert theirs == {"new_func": None, "force_patch": False, "create_dummy": False}
    manager = bind_manager(PatchRegistry("defaults"))
    assert defaults(manager.register_patch, "new_func", "force_patch", "create_dummy") == theirs
    assert defaults(PatchRegistry.register, "new_func", "force_patch", "create_dummy") == theirs
    assert defaults(ManagerBinding.register, "new_func", "force_patch", "create_dummy") == theirs
    assert defaults(MindSpeedPatch.set_patch_func, "force_patch") == {"force_patch": False}
