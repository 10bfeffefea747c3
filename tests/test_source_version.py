"""mindspeed_ms.engine.source_version: a checkout's declared version, read without running its code."""

from __future__ import annotations

from pathlib import Path

from _helpers import write_files

from mindspeed_ms.engine.source_version import declared_version, version_in_setup

# shaped like MindSpeed 2.2.0's setup.py (a654440c): module-level dunders, then setup(version=__version__)
MINDSPEED_SETUP = """
    import os
    import sys
    from pathlib import Path

    import setuptools

    if sys.version_info < (3,):
        raise Exception("Python 2 is not supported by MindSpeed.")

    __description__ = 'MindSpeed for LLMs of Ascend'
    __version__ = '0.12.1'
    __package_name__ = 'mindspeed'

    Path({marker!r}).write_text("setup.py was run")

    setuptools.setup(
        name=__package_name__,
        version=__version__,
        install_requires=Path("requirements.txt").read_text().splitlines(),
        packages=setuptools.find_packages(),
    )
"""
# shaped like megatron/core/__init__.py + package_info.py of Megatron-LM core_v0.12.1
MEGATRON_INIT = """
    from megatron.core.package_info import (
        __contact_emails__,
        __version__,
    )
"""
MEGATRON_INFO = """
    MAJOR = 0
    MINOR = 12
    PATCH = 1
    PRE_RELEASE = ''
    VERSION = (MAJOR, MINOR, PATCH, PRE_RELEASE)
    __shortversion__ = '.'.join(map(str, VERSION[:3]))
    __version__ = '.'.join(map(str, VERSION[:3])) + ''.join(VERSION[3:])
    __contact_emails__ = 'x@y'
"""


def test_mindspeeds_setup_py_gives_its_version_without_being_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_files(tmp_path / "MindSpeed", {
        "setup.py": MINDSPEED_SETUP.format(marker=str(marker)),
        "mindspeed/__init__.py": '"""Mindspeed is a distributed training platform."""\n'})
    version, where = declared_version(str(tmp_path / "MindSpeed" / "mindspeed"), distribution="mindspeed")
    assert (version, where) == ("0.12.1", str(tmp_path / "MindSpeed" / "setup.py"))
    assert not marker.exists()  # parsed, never executed


def test_megatrons_computed_version_is_followed_and_evaluated_from_literals(tmp_path: Path) -> None:
    write_files(tmp_path / "Megatron-LM", {"megatron/core/__init__.py": MEGATRON_INIT,
                                           "megatron/core/package_info.py": MEGATRON_INFO,
                                           "setup.py": "import x\nsetup(version=x.__version__)\n"})
    core = tmp_path / "Megatron-LM" / "megatron" / "core"
    version, where = declared_version(str(core), str(core.parent), distribution="megatron-core",
                                      package="megatron.core")
    assert (version, where) == ("0.12.1", str(core / "package_info.py"))


def test_init_version_wins_and_relative_imports_are_followed(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/pkg/__init__.py": "__version__ = '2.0.0'\n",
                           "a/setup.py": "setup(name='pkg', version='1.0')\n",
                           "b/pkg/__init__.py": "from ._v import __version__\n",
                           "b/pkg/_v.py": "__version__ = '3.1'\n"})
    assert declared_version(str(tmp_path / "a" / "pkg"), distribution="pkg")[0] == "2.0.0"
    assert declared_version(str(tmp_path / "b" / "pkg"), distribution="pkg")[0] == "3.1"


def test_what_cannot_be_read_without_running_code_is_no_version(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "computed/pkg/__init__.py": "import os\n__version__ = os.environ['V']\n",
        "computed/setup.py": "__version__ = read_version()\nsetup(name='pkg', version=__version__)\n",
        "other/pkg/__init__.py": "",
        "other/setup.py": "setup(name='another-project', version='9.9')\n",  # builds something else
        "broken/pkg/__init__.py": "__version__ = (\n",
        "toml/pkg/__init__.py": "",
        "toml/pyproject.toml": "[project]\nname = 'pkg'\nversion = '4.5.6'\n",
    })
    assert declared_version(str(tmp_path / "computed" / "pkg"), distribution="pkg") == (None, None)
    assert declared_version(str(tmp_path / "other" / "pkg"), distribution="pkg") == (None, None)
    assert declared_version(str(tmp_path / "broken" / "pkg"), distribution="pkg") == (None, None)
    assert declared_version(str(tmp_path / "toml" / "pkg"), distribution="pkg")[0] == "4.5.6"
    assert version_in_setup(str(tmp_path / "missing.py")) is None
