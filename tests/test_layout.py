"""The top level of mindspeed_ms: each module and package sits in a checked layer, and README lists it.

DESIGN.md: the top level holds the entry points, the facades (``__init__``, ``errors``), the platform facts and the
packages, nothing else. A new top-level module must take a place in ``[tool.importlinter]``'s layers (or be one of
the two named exceptions: the ``errors`` facade and ``migrate/`` beside the layers, each with its own contract), and
README's Layout section must list it.
"""

from __future__ import annotations

import re

import tomllib
from _helpers import ROOT

PACKAGE = ROOT / "mindspeed_ms"
#: outside the layers, each with contracts of its own (errors-facade; migrate-beside, migrate-used-by-entry-points)
BESIDE_THE_LAYERS = {"errors", "migrate"}


def top_level() -> set[str]:
    """Return the names of mindspeed_ms's top-level modules and packages (``__init__`` is the package itself)."""
    modules = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    return modules | packages


def contracts() -> dict[str, dict]:
    """Return pyproject.toml's import-linter contracts by id."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {contract["id"]: contract for contract in config["tool"]["importlinter"]["contracts"]}


def layered() -> set[str]:
    """Return the top-level names the layers contract places (``a : b`` and ``a | b`` share a layer)."""
    names = set()
    for layer in contracts()["layers"]["layers"]:
        names |= {name.strip().split(".")[0] for name in re.split(r"[:|]", layer)}
    return names


def test_every_top_level_module_and_package_is_in_a_layer_or_beside_them_with_its_own_contract() -> None:
    assert top_level() == layered() | BESIDE_THE_LAYERS
    assert not layered() & BESIDE_THE_LAYERS


def test_the_package_graph_is_kept_acyclic_and_the_beside_modules_have_their_contracts() -> None:
    found = contracts()
    assert found["no-package-cycles"]["type"] == "acyclic_siblings"
    assert found["no-package-cycles"]["ancestors"] == ["mindspeed_ms"]
    assert found["errors-facade"]["forbidden_modules"] == ["mindspeed_ms.errors"]
    assert found["migrate-beside"]["source_modules"] == ["mindspeed_ms.migrate"]


def test_readme_layout_lists_every_top_level_module_and_package() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^  ([a-z_]+)(?:\.py|/)\s", layout, flags=re.MULTILINE))
    assert listed == top_level() | {"__init__"}
