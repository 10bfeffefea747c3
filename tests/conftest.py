"""Shared fixtures: throwaway modules written to ``tmp_path`` and a fresh registry per test."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest

from mindspeed_ms import PatchRegistry


class ModuleFactory:
    """Write modules and packages under a temporary directory that is on ``sys.path``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.names: set = set()

    def write(self, dotted: str, source: str = "", *, package: bool = False) -> Path:
        """Write module ``dotted`` (parents become packages) and return its file."""
        parts = dotted.split(".")
        directory = self.root
        for part in parts[:-1]:
            directory = directory / part
            directory.mkdir(exist_ok=True)
            init = directory / "__init__.py"
            if not init.exists():
                init.write_text("")
        if package:
            directory = directory / parts[-1]
            directory.mkdir(exist_ok=True)
            path = directory / "__init__.py"
        else:
            path = directory / f"{parts[-1]}.py"
        path.write_text(textwrap.dedent(source))
        self.names.add(parts[0])
        importlib.invalidate_caches()
        return path

    def load(self, dotted: str, source: str = "", *, package: bool = False):
        self.write(dotted, source, package=package)
        return importlib.import_module(dotted)

    def cleanup(self) -> None:
        for name in list(sys.modules):
            if name.split(".")[0] in self.names:
                del sys.modules[name]


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[ModuleFactory]:
    root = tmp_path / "site"
    root.mkdir()
    sys.path.insert(0, str(root))
    factory = ModuleFactory(root)
    try:
        yield factory
    finally:
        sys.path.remove(str(root))
        factory.cleanup()
        importlib.invalidate_caches()


@pytest.fixture
def reg() -> Iterator[PatchRegistry]:
    registry = PatchRegistry("test")
    try:
        yield registry
    finally:
        registry.revert()


@pytest.fixture
def make_registry() -> Iterator[Callable[..., PatchRegistry]]:
    made = []

    def make(*args, **kwargs) -> PatchRegistry:
        registry = PatchRegistry(*args, **kwargs)
        made.append(registry)
        return registry

    try:
        yield make
    finally:
        for registry in reversed(made):
            registry.revert()


#: Modules that must never be imported in pytest's own process: ``import msadapter`` runs its torch proxy, which
#: replaces ``importlib.metadata.distribution(s)`` process-wide with a fake ``torch 2.1.1+dev``, and every later test
#: that reads installed versions (doctor, machine) then sees it. Tests run MSAdapter code in a child interpreter.
FORBIDDEN_IN_PROCESS = ("msadapter",)


@pytest.fixture(autouse=True)
def _no_msadapter_in_process(request: pytest.FixtureRequest) -> Iterator[None]:
    before = [name for name in FORBIDDEN_IN_PROCESS if name in sys.modules]
    yield
    if before:
        return  # an earlier test already broke the rule and was reported there
    imported = [name for name in FORBIDDEN_IN_PROCESS if name in sys.modules]
    if imported:
        pytest.fail(
            f"{request.node.nodeid} imported {', '.join(imported)} in pytest's process; run MSAdapter code in a child "
            "interpreter (tests/_helpers: run_python with subprocess_env) instead",
            pytrace=False,
        )
