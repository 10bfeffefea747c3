"""A registered target that does not exist: apply() fails atomically by default, or skips it on request.

Registrations written against another version of their target meet this in the field: MindSpeed-LLM
2.2.0 patches ``transformers...PretrainedConfig.dict_torch_dtype_to_str``, which transformers 4.57.1
(its own pin) renamed ``dict_dtype_to_str``; MindSpeed's manager raises there. ``missing_targets=
"skip"`` (``MINDSPEED_MS_MISSING_TARGETS=skip`` for the process-wide registry) keeps the rest.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from mindspeed_ms import PatchRegistry
from mindspeed_ms.errors import PatchApplyError, PatchValidationError

SOURCE = """
class Config:
    def dict_dtype_to_str(self, d):
        return "orig"

def func():
    return "orig"
"""


def test_by_default_a_missing_target_fails_the_whole_apply(reg, modules):
    mod = modules.load("mt_default", SOURCE)
    reg.register("mt_default.func", lambda: "new")
    reg.register("mt_default.Config.dict_torch_dtype_to_str", lambda self, d: "new")
    with pytest.raises(PatchApplyError, match="dict_dtype_to_str"):  # the suggestion names the new spelling
        reg.apply()
    assert mod.func() == "orig"
    states = {s.target: s.state for s in reg.status()}
    assert states["mt_default.Config.dict_torch_dtype_to_str"] == "failed"


def test_skip_leaves_the_missing_target_out_with_its_reason_and_applies_the_rest(modules, caplog):
    mod = modules.load("mt_skip", SOURCE)
    reg = PatchRegistry("skipping", missing_targets="skip")
    reg.register("mt_skip.func", lambda: "new")
    reg.register("mt_skip.Config.dict_torch_dtype_to_str", lambda self, d: "new")
    with caplog.at_level(logging.WARNING, logger="mindspeed_ms"):
        report = reg.apply()
    try:
        assert mod.func() == "new"
        assert not hasattr(mod.Config, "dict_torch_dtype_to_str")
        assert report.applied == 1
        assert report.skipped == 1
        (skipped,) = [s for s in report.statuses if s.state == "skipped"]
        assert "target missing" in skipped.reason
        assert "dict_dtype_to_str" in skipped.reason
        assert any("dict_torch_dtype_to_str" in record.getMessage() for record in caplog.records)
    finally:
        reg.revert()
    assert mod.func() == "orig"


def test_an_unknown_policy_is_a_typed_error():
    with pytest.raises(PatchValidationError, match="'error', 'skip'"):
        PatchRegistry("bad", missing_targets="ignore")


@pytest.mark.parametrize(("value", "expected"), [("skip", "skip"), ("", "error"), ("bogus", None)])
def test_the_environment_sets_the_process_wide_registrys_policy(value, expected):
    env = dict(os.environ, MINDSPEED_MS_MISSING_TARGETS=value)
    done = subprocess.run([sys.executable, "-c", "from mindspeed_ms.adaptation import default_registry\n"
                           "print(default_registry().missing_targets)"], env=env, capture_output=True, text=True,
                          timeout=120)
    if expected is None:
        assert done.returncode != 0
        assert "MINDSPEED_MS_MISSING_TARGETS='bogus'" in done.stderr
        assert "SettingError" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected


def test_skip_is_the_same_policy_for_a_target_in_a_module_imported_after_apply(modules, caplog):
    import importlib

    modules.write("mt_late", SOURCE)
    reg = PatchRegistry("skipping-late", missing_targets="skip")
    reg.register("mt_late.func", lambda: "new")
    reg.register("mt_late.Config.dict_torch_dtype_to_str", lambda self, d: "new")
    try:
        reg.apply()
        assert {s.state for s in reg.status()} == {"pending-import"}
        with caplog.at_level(logging.WARNING, logger="mindspeed_ms"):
            mod = importlib.import_module("mt_late")
        states = {s.target: (s.state, s.reason) for s in reg.status()}
        assert states["mt_late.func"][0] == "applied"
        assert mod.func() == "new"
        state, reason = states["mt_late.Config.dict_torch_dtype_to_str"]
        assert state == "skipped"
        assert "missing_targets='skip'" in (reason or "")
        assert "dict_dtype_to_str" in reason
        assert not any(record.levelno >= logging.ERROR for record in caplog.records)
    finally:
        reg.revert()


def test_the_error_that_stops_a_strict_apply_names_the_skip_setting(reg, modules):
    modules.load("mt_hint", SOURCE)
    reg.register("mt_hint.Config.dict_torch_dtype_to_str", lambda self, d: "new")
    with pytest.raises(PatchApplyError, match="MINDSPEED_MS_MISSING_TARGETS=skip"):
        reg.apply()


# --- the two stale targets of MindSpeed-LLM 2.2.0, on MindSpeed's manager (stand-in) and on ours ---
STALE_CONFIG = """
class PretrainedConfig:
    def dict_dtype_to_str(self, d):          # transformers 4.57 renamed dict_torch_dtype_to_str
        return "orig"
"""
STALE_EMBEDDINGS = """
def apply_rotary(x):                         # megatron-core 0.12.1 has no _rotate_half here
    return "orig"
"""
STALE_ORDER = ("mt_emb.apply_rotary", "mt_emb._rotate_half", "mt_cfg.PretrainedConfig.dict_torch_dtype_to_str",
               "mt_emb.after")


def _stale_registrations(manager):
    for target in STALE_ORDER:
        manager.register_patch(target, lambda *args: "new")


def test_mindspeeds_manager_raises_only_on_the_renamed_class_attribute_and_creates_the_other(modules):
    import importlib.util
    from pathlib import Path

    modules.load("mt_cfg", STALE_CONFIG)
    emb = modules.load("mt_emb", STALE_EMBEDDINGS + "\ndef after():\n    return 'orig'\n")
    stand_in = Path(__file__).resolve().parent / "fakes" / "mindspeed" / "patch_utils.py"
    spec = importlib.util.spec_from_file_location("stand_in_stale_patch_utils", stand_in)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manager = module.MindSpeedPatchesManager
    manager.patches_info.clear()
    _stale_registrations(manager)
    with pytest.raises(RuntimeError, match="no exist dict_torch_dtype_to_str"):
        manager.apply_patches()
    # applied before the raise and not undone; _rotate_half created silently; the rest never applied
    assert emb.apply_rotary(1) == "new"
    assert emb._rotate_half(1) == "new"
    assert emb.after() == "orig"


def test_ours_fails_atomically_by_default_and_skips_both_on_request(modules):
    from mindspeed_ms.patch_manager import bind_manager

    modules.load("mt_cfg", STALE_CONFIG)
    emb = modules.load("mt_emb", STALE_EMBEDDINGS + "\ndef after():\n    return 'orig'\n")
    strict = PatchRegistry("stale-default")
    _stale_registrations(bind_manager(strict))
    with pytest.raises(PatchApplyError):
        bind_manager(strict).apply_patches()
    assert emb.apply_rotary(1) == "orig"
    assert not hasattr(emb, "_rotate_half")  # nothing applied, nothing created
    skipping = PatchRegistry("stale-skip", missing_targets="skip")
    _stale_registrations(bind_manager(skipping))
    try:
        bind_manager(skipping).apply_patches()
        states = {s.target: s.state for s in skipping.status()}
        assert states == {"mt_emb.apply_rotary": "applied", "mt_emb._rotate_half": "skipped",
                          "mt_cfg.PretrainedConfig.dict_torch_dtype_to_str": "skipped", "mt_emb.after": "applied"}
        assert emb.after() == "new"
        assert not hasattr(emb, "_rotate_half")
    finally:
        skipping.revert()


def test_the_readme_states_what_mindspeeds_manager_does_on_the_two_stale_targets():
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "MindSpeed's own manager raises on those two" not in readme
    assert "raises only on `PretrainedConfig.dict_torch_dtype_to_str`" in readme
    assert "after applying 163 of them (counted when the flow registered 199)" in readme
    assert "silently *creates*" in readme
