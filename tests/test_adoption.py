"""mindspeed_ms.patch_manager.adoption: the switch that makes ``mindspeed.patch_utils`` use our manager."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _helpers import FAKES, ROOT, subprocess_env

from mindspeed_ms.adaptation import Settings, adoption_wanted
from mindspeed_ms.errors import SettingError
from mindspeed_ms.patch_manager.adoption import ADOPT_ENV


@pytest.mark.parametrize(("framework", "value", "expected"), [
    ("mindspore", None, True), ("pytorch", None, False), ("mindspore", "", True), ("pytorch", " ", False),
    ("mindspore", "0", False), ("mindspore", "Off", False), ("pytorch", "1", True), ("pytorch", "YES", True),
])
def test_adoption_follows_the_framework_unless_the_variable_says_otherwise(framework: str, value: str | None,
                                                                           expected: bool) -> None:
    environ = {} if value is None else {ADOPT_ENV: value}
    assert adoption_wanted(framework, Settings.from_environ(environ)) is expected


@pytest.mark.parametrize("framework", ["mindspore", "pytorch"])
def test_disabling_the_provider_turns_adoption_off(framework: str) -> None:
    settings = Settings.from_environ({ADOPT_ENV: "1", "MINDSPEED_MS_DISABLE": "mindspeed_patch_manager"})
    assert adoption_wanted(framework, settings) is False


@pytest.mark.parametrize("value", ["flase", "2", "nope", "²", "true!"])
@pytest.mark.parametrize("framework", ["mindspore", "pytorch"])
def test_a_malformed_value_is_a_typed_error_naming_the_variable(framework: str, value: str) -> None:
    with pytest.raises(SettingError, match=ADOPT_ENV) as caught:
        adoption_wanted(framework, Settings.from_environ({ADOPT_ENV: value}))
    assert isinstance(caught.value, ValueError)
    assert (caught.value.variable, caught.value.value) == (ADOPT_ENV, value)


# --- registrations made before the adoption, and aliases of the manager under other names (subprocesses) ---
TARGET = """
def f(x):
    return ("orig f", x)

def g(x):
    return ("orig g", x)
"""
# MindSpeed's manager used before mindspeed_ms.adaptor is imported, held under another name in __main__
BEFORE = textwrap.dedent("""
    import json, sys
    from mindspeed.patch_utils import MindSpeedPatchesManager as M
    import pmx_target

    def rep(x):
        return ("rep", x)

    def rep_g(x):
        return ("rep g", x)

    def trace_wrapper(fn):
        def traced(*args):
            return ("traced", fn(*args))
        return traced

    M.register_patch("pmx_target.f", rep)
    M.register_patch("pmx_target.f", trace_wrapper)
""")
AFTER = textwrap.dedent("""
    M.register_patch("pmx_target.g", rep_g)      # through the alias, after the adaptor
    M.apply_patches()
    result = {"f": pmx_target.f(1), "g": pmx_target.g(2)}
    if "mindspeed_ms.adaptation" in sys.modules:
        from mindspeed_ms.adaptation import default_registry, pytorch_registry
        registries = {"default": default_registry(), "pytorch": pytorch_registry()}
        result["status"] = {name: {s.target: [s.state, s.provider] for s in registry.status()}
                            for name, registry in registries.items()}
        result["one_registry"] = type(M.patches_info).__name__
        result["kept"] = sorted(sys.modules["mindspeed.patch_utils"].MindSpeedPatchesManager.patches_info)
    if "mindspeed_ms.adaptation" in sys.modules:  # the mode's registry owns them: its revert restores them
        registries[sys.argv[-1]].revert()
        result["reverted"] = {"f": pmx_target.f(1), "g": pmx_target.g(2)}
    print(json.dumps(result))
""")


def _python(script: str, *argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = subprocess_env(drop=("MINDSPEED",), PYTHONPATH=os.pathsep.join([str(cwd), str(FAKES), str(ROOT)]), **env)
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=environ,
                          timeout=300, cwd=str(cwd))


# (training flags, environment, the registry the adaptation applies in that mode)
@pytest.mark.parametrize(("flags", "env", "applied"), [
    (("--ai-framework", "mindspore"), {}, "default"),
    (("--ai-framework", "pytorch"), {ADOPT_ENV: "1"}, "pytorch"),
    ((), {ADOPT_ENV: "1"}, "pytorch"),  # no flag: PyTorch mode
], ids=["mindspore", "pytorch", "no-flag"])
def test_registrations_made_before_adoption_are_carried_over_and_aliases_share_one_registry(
        tmp_path: Path, flags: tuple[str, ...], env: dict[str, str], applied: str) -> None:
    (tmp_path / "pmx_target.py").write_text(TARGET)
    plain = _python(BEFORE + AFTER, cwd=tmp_path)  # MindSpeed's manager alone: the reference
    assert plain.returncode == 0, plain.stderr[-3000:]
    reference = json.loads(plain.stdout.strip().splitlines()[-1])
    assert reference == {"f": ["traced", ["rep", 1]], "g": ["rep g", 2]}

    adopted = _python(BEFORE + "import mindspeed_ms.adaptor\n" + AFTER, *flags, applied, cwd=tmp_path, **env)
    assert adopted.returncode == 0, adopted.stderr[-3000:]
    ours = json.loads(adopted.stdout.strip().splitlines()[-1])
    assert {"f": ours["f"], "g": ours["g"]} == reference
    status = ours["status"][applied]
    assert status["pmx_target.f"] == ["applied", "mindspeed.patch_utils"]
    assert status["pmx_target.g"] == ["applied", "mindspeed.patch_utils"]
    other = ours["status"]["pytorch" if applied == "default" else "default"]
    assert not {"pmx_target.f", "pmx_target.g"} & set(other)
    assert ours["reverted"] == {"f": ["orig f", 1], "g": ["orig g", 2]}
    assert ours["one_registry"] == "PatchesInfo"
    assert {"pmx_target.f", "pmx_target.g"} <= set(ours["kept"])


def test_patches_mindspeed_applied_before_adoption_fail_loudly_naming_them(tmp_path: Path) -> None:
    (tmp_path / "pmx_target.py").write_text(TARGET)
    script = BEFORE + "M.apply_patches()\nimport mindspeed_ms.adaptor\n"
    done = _python(script, "--ai-framework", "pytorch", cwd=tmp_path, **{ADOPT_ENV: "1"})
    assert done.returncode != 0
    assert "AdoptionError" in done.stderr
    assert "'pmx_target.f'" in done.stderr
    assert "mindspeed_ms.adaptor before anything applies" in done.stderr  # says what to do
