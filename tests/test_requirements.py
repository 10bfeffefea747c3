from __future__ import annotations

import pytest
from _helpers import subprocess_env

from mindspeed_ms.engine.requirements import normalize_requires, unmet_requirements
from mindspeed_ms.errors import PatchValidationError


def test_normalize_accepts_string_and_sequence():
    assert normalize_requires("wrapt>=2") == ("wrapt>=2",)
    assert normalize_requires(["wrapt>=2", "packaging"]) == ("wrapt>=2", "packaging")
    assert normalize_requires(None) == ()


@pytest.mark.parametrize("bad", ["wrapt >= = 2", [1], 3.5])
def test_normalize_rejects_malformed(bad):
    with pytest.raises(PatchValidationError):
        normalize_requires(bad, target="x.y")


def test_unmet_requirements_reports_missing_and_out_of_range():
    problems = unmet_requirements(["wrapt>=2", "wrapt<1", "no-such-dist-qq"])
    assert len(problems) == 2
    assert "wrapt" in problems[0]
    assert "'wrapt<1'" in problems[0]
    assert "no-such-dist-qq is not installed" in problems[1]


def test_marker_that_does_not_apply_is_met():
    assert unmet_requirements(['no-such-dist-qq; python_version < "3.0"']) == []


# -- what is importable without distribution metadata (a source checkout on PYTHONPATH) ---------------------

@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """Return ``make(version_line) -> distribution name``: a fresh package on sys.path, no dist-info."""
    import importlib
    import sys
    import uuid

    def make(init: str = "", setup: str | None = None) -> str:
        name = f"ckpkg_{uuid.uuid4().hex[:8]}"
        root = tmp_path / name
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(init)
        if setup is not None:
            (root / "setup.py").write_text(setup.replace("NAME", name))
        monkeypatch.syspath_prepend(str(root))
        importlib.invalidate_caches()
        assert name not in sys.modules
        return name

    return make


def test_a_checkout_declaring_its_version_is_installed_at_that_version(checkout):
    # (a setup.py naming another project is not this package's: tests/test_source_version.py)
    from mindspeed_ms.engine.requirements import installed_version

    name = checkout(setup="__version__ = '0.12.1'\n__package_name__ = 'NAME'\n"
                          "setup(name=__package_name__, version=__version__)\n")
    found = installed_version(name)
    assert (found.version, found.source) == ("0.12.1", "source")
    assert found.declared_in.endswith("setup.py")
    assert unmet_requirements([f"{name}>=0.12,<0.13"]) == []
    (problem,) = unmet_requirements([f"{name}<0.12"])
    assert "0.12.1 (a source checkout at" in problem
    assert "setup.py" in problem
    assert f"'{name}<0.12'" in problem


def test_a_checkout_without_a_version_counts_as_met_unverified_never_silently(checkout):
    from mindspeed_ms.engine.requirements import check_requirements

    name = checkout(init="VERSION = compute()\n")
    check = check_requirements([f"{name}>=1,<2"])
    assert check.unmet == ()
    (sentence,) = check.unverified
    assert sentence.startswith(f"{name} (a source checkout at ")
    assert "no version declared" in sentence
    assert "unverified" in sentence
    assert check_requirements([name]) == check_requirements([])  # nothing to verify without a range


def test_a_registration_on_an_unverified_requirement_applies_and_says_so(checkout, modules, reg):
    name = checkout()
    module = modules.load(f"{name}_target", "def f():\n    return 'orig'\n")
    reg.register(f"{module.__name__}.f", lambda: "patched", requires=f"{name}>=0.12,<0.13")
    report = reg.apply()
    assert module.f() == "patched"
    (status,) = report.statuses
    assert status.state == "applied"
    assert len(status.unverified) == 1
    assert status.unverified[0] in status.warnings
    assert "1 on unverified requirements" in report.summary()
    assert name in report.summary()


# -- the canonical set-up: MindSpeed as a source checkout on PYTHONPATH, adopted --------------------------------

ADOPTION_PROBE = """
import json, sys
import mindspeed_ms.adaptor
from mindspeed.patch_utils import MindSpeedPatchesManager
import probe_target
MindSpeedPatchesManager.register_patch("probe_target.f", lambda: "MindSpeed's replacement")
MindSpeedPatchesManager.apply_patches()
from mindspeed_ms import MindSporeAdaptation
status = {s.target: s for s in MindSporeAdaptation.status()}
manager = status["mindspeed.patch_utils.MindSpeedPatchesManager.register_patch"]
print(json.dumps({"manager": [manager.state, manager.reason, list(manager.unverified)],
                  "f": [probe_target.f(), status["probe_target.f"].state],
                  "ours": type(MindSpeedPatchesManager.patches_info).__module__.startswith("mindspeed_ms")}))
"""


@pytest.mark.parametrize("declares", [True, False])
def test_a_mindspeed_checkout_without_metadata_is_adopted(tmp_path, declares):
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    checkout = tmp_path / "MindSpeed"
    shutil.copytree(root / "tests" / "fakes" / "mindspeed", checkout / "mindspeed")  # no dist-info beside it
    version = "'0.12.1'" if declares else "read_version()"  # MindSpeed's own setup.py declares '0.12.1'
    (checkout / "setup.py").write_text(f"import setuptools\n__version__ = {version}\n__package_name__ = 'mindspeed'\n"
                                       "setuptools.setup(name=__package_name__, version=__version__)\n")
    (tmp_path / "probe_target.py").write_text("def f():\n    return 'original'\n")
    env = subprocess_env(drop=("MINDSPEED",), PYTHONPATH=os.pathsep.join([str(root), str(checkout), str(tmp_path)]))
    done = subprocess.run([sys.executable, "-c", ADOPTION_PROBE, "--ai-framework", "mindspore"], env=env,
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["manager"][0] == "applied"
    assert seen["ours"]
    assert seen["f"] == ["MindSpeed's replacement", "applied"]  # through our registry
    summary = next(line for line in done.stderr.splitlines() if "MindSpore backend" in line)
    if declares:
        assert seen["manager"][2] == []
        assert "unverified" not in summary
    else:
        assert "no version declared" in seen["manager"][2][0]
        assert "on unverified requirements (no version declared by the source checkout of mindspeed" in summary
