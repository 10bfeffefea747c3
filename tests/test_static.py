"""Tests of mindspeed_ms.engine.static: resolving targets from installed sources without importing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from _helpers import write_files

import mindspeed_ms.engine.static
from mindspeed_ms.engine.static import MISSING, OK, UNVERIFIABLE, StaticResolver, resolve_static

PACKAGE = {
    "stpkg/__init__.py": """
        from .core import Engine, helper as exported_helper
        from .core import *
        import stns.sub as jd
        VERSION: str = "1"
        UNTYPED: int
        if VERSION:
            IF_NAME = 1
        else:
            ELSE_NAME = 2
        try:
            from .optional import fast_path
        except ImportError:
            fast_path = None
        Alias = Engine
        first, (second, *rest) = 1, (2, 3)
    """,
    "stpkg/core.py": """
        __all__ = ["Engine", "helper", "public_star"]

        class Base:
            def inherited(self):
                pass

            @staticmethod
            def static_one():
                pass

        class Engine(Base):
            class Inner:
                class Deeper:
                    def method(self):
                        pass

            level: int = 3

            def run(self):
                pass

            async def arun(self):
                pass

        def helper():
            pass

        def public_star():
            pass

        Engine.added_later = 1

        class Dynamic(make_base()):
            pass

        class Child(Engine):
            pass
    """,
    "stpkg/lazy.py": """
        def real():
            pass

        def __getattr__(name):
            raise AttributeError(name)
    """,
    "stns/sub.py": """
        def f():
            pass
    """,
}


@pytest.fixture()
def source_tree(tmp_path: Path) -> Path:
    write_files(tmp_path, PACKAGE)
    (tmp_path / "stpkg" / f"ext{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    return tmp_path


def _one(target: str, root: Path) -> mindspeed_ms.engine.static.StaticResult:
    return resolve_static(target, search_path=[str(root)])[0]


@pytest.mark.parametrize(
    ("target", "kind", "line_in"),
    [
        ("stpkg.core.helper", "function", "core.py"),
        ("stpkg.core.Engine.run", "function", "core.py"),
        ("stpkg.core.Engine.arun", "function", "core.py"),
        ("stpkg.core.Engine.Inner.Deeper.method", "function", "core.py"),
        ("stpkg.core.Engine.level", "value", "core.py"),
        ("stpkg.Engine.run", "function", "core.py"),  # re-exported with `from .core import Engine`
        ("stpkg.exported_helper", "function", "core.py"),  # `import ... as` alias
        ("stpkg.public_star", "function", "core.py"),  # through `from .core import *`
        ("stpkg.Alias.run", "function", "core.py"),  # `Alias = Engine`
        ("stpkg.VERSION", "value", "__init__.py"),  # annotated assignment
        ("stpkg.IF_NAME", "value", "__init__.py"),
        ("stpkg.ELSE_NAME", "value", "__init__.py"),
        ("stpkg.fast_path", "value", "__init__.py"),  # bound in the except branch
        ("stpkg.second", "value", "__init__.py"),  # tuple unpacking
        ("stpkg.core.Engine.inherited", "function", "core.py"),
        ("stpkg.core.Child.static_one", "function", "core.py"),  # two levels of bases
        ("stpkg.core.Engine.added_later", "value", "core.py"),  # `Engine.added_later = 1`
        ("stpkg.jd.f", "function", "sub.py"),  # `import stns.sub as jd`
        ("stpkg.lazy.real", "function", "lazy.py"),
        ("stpkg.core", "module", "core.py"),
        ("stns.sub.f", "function", "sub.py"),  # namespace package
    ],
)
def test_defined_targets_resolve_with_their_location(
    source_tree: Path, target: str, kind: str, line_in: str
) -> None:
    result = _one(target, source_tree)
    assert result.state == OK, result.reason
    assert result.kind == kind
    assert result.location is not None
    assert line_in in result.location


def test_method_inherited_from_object_resolves(source_tree: Path) -> None:
    result = _one("stpkg.core.Engine.__init__", source_tree)
    assert result.state == OK
    assert result.kind == "object"


def test_misspelled_method_fails_with_a_repr_quoted_suggestion(source_tree: Path) -> None:
    result = _one("stpkg.core.Engine.rnu", source_tree)
    assert result.state == MISSING
    assert result.resolved == "stpkg.core.Engine"
    assert result.suggestions == ("run",)
    assert "'rnu'" in (result.reason or "")
    assert "did you mean 'run'" in (result.reason or "")


def test_misspelled_submodule_suggests_the_real_one(source_tree: Path) -> None:
    result = _one("stpkg.cor.Engine", source_tree)
    assert result.state == MISSING
    assert "core" in result.suggestions


def test_missing_top_level_module_suggests_close_names(source_tree: Path) -> None:
    result = _one("stpgk.core.helper", source_tree)
    assert result.state == MISSING
    assert "no module named 'stpgk'" in (result.reason or "")
    assert "stpkg" in result.suggestions


def test_bare_annotation_binds_nothing(source_tree: Path) -> None:
    assert _one("stpkg.UNTYPED", source_tree).state == MISSING


def test_namespace_package_knows_its_submodules(source_tree: Path) -> None:
    result = _one("stns.sbu.f", source_tree)
    assert result.state == MISSING
    assert result.suggestions == ("sub",)


def test_module_getattr_makes_unknown_names_unverifiable(source_tree: Path) -> None:
    result = _one("stpkg.lazy.anything", source_tree)
    assert result.state == UNVERIFIABLE
    assert "__getattr__" in (result.reason or "")


def test_extension_module_is_unverifiable_not_missing(source_tree: Path) -> None:
    assert _one("stpkg.ext", source_tree).state == OK
    result = _one("stpkg.ext.fast_kernel", source_tree)
    assert result.state == UNVERIFIABLE
    assert "no Python source" in (result.reason or "")


def test_computed_base_class_makes_missing_attribute_unverifiable(source_tree: Path) -> None:
    result = _one("stpkg.core.Dynamic.whatever", source_tree)
    assert result.state == UNVERIFIABLE
    assert "make_base()" in (result.reason or "")


def test_attribute_of_a_function_is_unverifiable(source_tree: Path) -> None:
    assert _one("stpkg.core.helper.cache", source_tree).state == UNVERIFIABLE


def test_malformed_target_is_reported_not_raised(source_tree: Path) -> None:
    result = _one("stpkg..core", source_tree)
    assert result.state == MISSING
    assert "dotted path" in (result.reason or "")


def test_sys_path_is_searched_like_the_import_system(
    source_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(source_tree))
    results = StaticResolver().resolve("stpkg.core.Engine.Inner.Deeper.method")
    assert results.state == OK
    assert "stpkg" not in sys.modules
    assert "stpkg.core" not in sys.modules


def test_to_dict_is_json_serialisable(source_tree: Path) -> None:
    data = _one("stpkg.core.Engine.rnu", source_tree).to_dict()
    assert json.loads(json.dumps(data))["suggestions"] == ["run"]


_SUBPROCESS_CHECK = """
import json, sys
from mindspeed_ms.engine import static as module
results = module.resolve_static(sys.argv[2:])
watched = {"megatron", "torch", "msadapter", "mindspore", "stpkg"}
heavy = sorted(name for name in sys.modules if name.split(".")[0] in watched)
print(json.dumps({"results": [r.to_dict() for r in results], "imported": heavy}))
"""


def test_real_megatron_core_sources_resolve_without_importing_anything(source_tree: Path) -> None:
    targets = [
        "megatron.core.tensor_parallel.random._set_cuda_rng_state",
        "megatron.core.tensor_parallel.layers.ColumnParallelLinear.forward",
        "megatron.core.tensor_parallel.ColumnParallelLinear.forward",  # re-exported by the package
        "megatron.core.tensor_parallel.random.CheckpointFunction.apply",  # inherited from torch's Function
        "megatron.core.tensor_parallel.random._set_cuda_rng_stat",
        "mindspeed_ms.adaptation.framework.get_ai_framework",  # found through the editable install's finder
        "stpkg.core.helper",  # found through PYTHONPATH
    ]
    env = dict(os.environ, PYTHONPATH=str(source_tree))
    completed = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_CHECK, mindspeed_ms.engine.static.__file__, *targets],
        cwd=str(source_tree / "stns"), env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    states = {item["target"]: item for item in report["results"]}
    for target in targets:
        if target.endswith("_stat"):
            continue
        assert states[target]["state"] == OK, states[target]
    typo = states["megatron.core.tensor_parallel.random._set_cuda_rng_stat"]
    assert typo["state"] == MISSING
    assert "did you mean '_set_cuda_rng_state'" in typo["reason"]
    assert report["imported"] == []


def test_module_made_at_run_time_by_a_custom_loader_is_unverifiable(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    class ProxyLoader:  # how MSAdapter's RedirectLoader presents `torch` once msadapter is imported
        def create_module(self, spec: ModuleSpec) -> None:
            return None

        def exec_module(self, module: ModuleType) -> None:
            pass

    proxy = ModuleType("static_proxy_pkg")
    proxy.__spec__ = ModuleSpec("static_proxy_pkg", ProxyLoader(), is_package=True)  # type: ignore[arg-type]
    proxy.__path__ = []
    monkeypatch.setitem(sys.modules, "static_proxy_pkg", proxy)
    result = StaticResolver().resolve("static_proxy_pkg.nn.Module")
    assert result.state == UNVERIFIABLE
    assert "ProxyLoader" in (result.reason or "")


# -- namespace folders, mangled names, ABC bases, the runtime's module mapping (issue 11 items 2, 21-23)
def test_a_namespace_folder_inside_an_unimported_regular_package_resolves(tmp_path: Path) -> None:
    write_files(tmp_path, {"nsreg/__init__.py": "", "nsreg/space/deep/mod.py": "def f():\n    pass\n"})
    [result] = resolve_static("nsreg.space.deep.mod.f", search_path=[str(tmp_path)])
    assert result.state == OK
    assert result.location.endswith("mod.py:1")


def test_the_import_system_view_resolves_a_namespace_folder_of_an_unimported_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"nsreg2/__init__.py": "", "nsreg2/space/mod.py": "def f():\n    pass\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert StaticResolver().resolve("nsreg2.space.mod.f").state == OK
    assert "nsreg2" not in sys.modules


MANGLED = """
from abc import ABC

class Registry(ABC):
    def __register(self):
        pass

class _Hidden:
    def __secret(self):
        pass

class Optimizer(ABC):
    pass

class Distributed(Optimizer):
    pass
"""


@pytest.mark.parametrize("target", ["mangled.Registry._Registry__register", "mangled._Hidden._Hidden__secret"])
def test_a_mangled_private_method_resolves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    write_files(tmp_path, {"mangled.py": MANGLED})
    monkeypatch.syspath_prepend(str(tmp_path))
    result = StaticResolver().resolve(target)
    assert result.state == OK, result.reason
    assert result.kind == "function"


def test_a_mangled_name_is_not_found_under_another_class(tmp_path: Path) -> None:
    write_files(tmp_path, {"mangled2.py": MANGLED})
    [result] = resolve_static("mangled2._Hidden._Registry__register", search_path=[str(tmp_path)])
    assert result.state != OK


def test_new_inherited_from_object_through_an_abc_base_resolves(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"abcopt.py": MANGLED})
    monkeypatch.syspath_prepend(str(tmp_path))
    result = StaticResolver().resolve("abcopt.Distributed.__new__")
    assert result.state == OK, result.reason
    assert result.kind == "object"


def test_torch_is_read_from_the_package_the_runtime_maps_it_to(tmp_path: Path) -> None:
    write_files(tmp_path, {"torch/__init__.py": "def old_only():\n    pass\n",
                     "msadapter/__init__.py": "def runtime_only():\n    pass\n",
                     "msadapter/nn/__init__.py": "class Module:\n    pass\n"})
    plain = StaticResolver([str(tmp_path)])
    mapped = StaticResolver([str(tmp_path)], module_map={"torch": "msadapter"})
    assert plain.resolve("torch.runtime_only").state == MISSING
    assert mapped.resolve("torch.runtime_only").state == OK
    assert mapped.resolve("torch.nn.Module").state == OK
    assert mapped.resolve("torch.old_only").state == MISSING


def test_verify_maps_torch_to_msadapter_when_msadapter_is_installed() -> None:
    from importlib.util import find_spec

    from mindspeed_ms.adaptation.verify import runtime_module_map

    expected = {"torch": "msadapter"} if find_spec("msadapter") is not None else {}
    assert runtime_module_map() == expected
