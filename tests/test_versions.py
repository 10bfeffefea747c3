"""Tests of the version table: pins inside the ranges, one source for patches, pyproject and errors."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import ROOT
from packaging.requirements import Requirement

import mindspeed_ms.patches
from mindspeed_ms import PatchRegistry, adaptation, device, versions
from mindspeed_ms.patches import megatron_core, mindspeed, msadapter, msadapter_cpu

PINS = [
    (versions.MINDSPORE_REQUIREMENT, "mindspore", versions.MINDSPORE_VERSION),
    (versions.MSADAPTER_REQUIREMENT, "msadapter", versions.MSADAPTER_VERSION),
    (versions.MEGATRON_CORE_REQUIREMENT, "megatron-core", versions.MEGATRON_CORE_VERSION),
    (versions.MINDSPEED_REQUIREMENT, "mindspeed", versions.MINDSPEED_DIST_VERSION),
]


@pytest.mark.parametrize(("requirement", "name", "pin"), PINS)
def test_each_pin_lies_inside_the_range_the_patches_require(requirement: str, name: str, pin: str) -> None:
    parsed = Requirement(requirement)
    assert parsed.name == name
    assert parsed.specifier.contains(pin, prereleases=True), f"{pin} is outside {requirement}"


def test_megatron_core_pin_is_the_release_of_the_megatron_branch() -> None:
    assert versions.MEGATRON_BRANCH == f"core_r{versions.MEGATRON_CORE_VERSION}"
    assert versions.MINDSPEED_VERSION.endswith(f"_{versions.MEGATRON_BRANCH}")


def test_providers_require_the_table_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    assert megatron_core.requires == (versions.MEGATRON_CORE_REQUIREMENT,)
    assert msadapter.requires == msadapter_cpu.requires == (versions.MSADAPTER_REQUIREMENT,)
    monkeypatch.setenv(device.DEVICE_ENV_VAR, "CPU")  # msadapter_cpu registers on the CPU only
    device.clear_device_cache()
    try:
        requires = {}
        for provider in (msadapter, msadapter_cpu, mindspeed):
            registry = PatchRegistry(name=provider.__name__)
            provider.register(registry, argparse.Namespace(use_ascend_coc=True))
            requires[provider] = {frozenset(status.requires) for status in registry.status()}
    finally:
        device.clear_device_cache()
    both = frozenset({versions.MSADAPTER_REQUIREMENT, versions.MINDSPORE_REQUIREMENT})
    assert requires[msadapter] == {both}
    assert requires[msadapter_cpu] == {both, frozenset({versions.MINDSPORE_REQUIREMENT})}
    assert requires[mindspeed] == {frozenset({versions.MINDSPEED_REQUIREMENT})}


def test_no_provider_hard_codes_a_requirement_string() -> None:
    pattern = re.compile(r"""["'](mindspore|msadapter|megatron-core|mindspeed)\s*[<>=!~]""")
    sources = sorted(Path(mindspeed_ms.patches.__path__[0]).glob("*.py"))
    assert sources
    offenders = [f"{source.name}: {match.group(0)}" for source in sources
                 for match in pattern.finditer(source.read_text())]
    assert offenders == [], "use the constants of mindspeed_ms.versions"


def test_pyproject_extra_pins_the_table_versions() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'"mindspore=={versions.MINDSPORE_VERSION}"' in text
    assert f'"msadapter=={versions.MSADAPTER_VERSION}"' in text


def test_install_commands_name_the_pins() -> None:
    assert f"mindspore=={versions.MINDSPORE_VERSION}" in versions.MINDSPORE_INSTALL
    assert versions.MSADAPTER_INSTALL == f"pip install msadapter=={versions.MSADAPTER_VERSION} typing_extensions"
    assert "--no-deps" in versions.MEGATRON_CORE_INSTALL  # its declared dependencies pull a real torch


def test_table_rows_follow_the_seed() -> None:
    assert [row[0] for row in versions.VERSION_TABLE] == ["MindSpeed", "Megatron", "CANN", "MindSpore", "MSAdapter",
                                                          "Python"]
    seed = dict((row[0], row[1]) for row in versions.VERSION_TABLE)
    assert seed["CANN"] == "8.3.RC1"
    assert seed["MindSpore"] == "2.7.1"
    assert seed["MSAdapter"] == "master"


@pytest.mark.parametrize(("version", "supported"), [((3, 9, 18), True), ((3, 10), True), ((3, 11, 7), False),
                                                     ((3, 8, 1), False), ((2, 7, 18), False)])
def test_supported_python(version: tuple[int, ...], supported: bool) -> None:
    assert versions.is_supported_python(version) is supported


def test_python_versions_text() -> None:
    assert versions.python_versions_text() == "3.9.x or 3.10.x"


def test_importing_the_table_loads_nothing_heavy() -> None:
    code = ("import sys; import mindspeed_ms; before = set(sys.modules); import mindspeed_ms.versions; "
            "print(sorted(set(sys.modules) - before))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['mindspeed_ms.versions']"


def test_missing_msadapter_error_quotes_the_table_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msadapter", None)  # blocks the import, as if not installed
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with pytest.raises(ImportError) as info:
        adaptation.prepare_backend()
    assert versions.MSADAPTER_INSTALL in str(info.value)


def test_mindspeed_requirement_matches_what_real_mindspeed_reports() -> None:
    # MindSpeed's setup.py on its 2.x release branches for core_r0.12.1 sets __version__ = '0.12.1'
    requirement = Requirement(versions.MINDSPEED_REQUIREMENT)
    assert versions.MINDSPEED_DIST_VERSION == versions.MEGATRON_CORE_VERSION
    assert requirement.specifier.contains(versions.MINDSPEED_DIST_VERSION)
    assert not requirement.specifier.contains("0.8.0")  # the core_r0.8.0 releases: other signatures


def test_the_mindspeed_stand_in_reports_the_real_distributions_version() -> None:
    from importlib.metadata import PathDistribution

    [info] = (ROOT / "tests" / "fakes").glob("mindspeed-*.dist-info")
    assert PathDistribution(info).version == versions.MINDSPEED_DIST_VERSION
