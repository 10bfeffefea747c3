"""compat.checkpoint.fp8_fix_without_te_wrapper: Megatron-LM's torch_dist resume without Transformer Engine.

Megatron-LM core_v0.12.1's ``load_checkpoint`` calls ``fix_fp8_params_lose_precision_when_loading_dist_ckpt`` on
every ``torch_dist`` resume; its first line, ``is_te_min_version("2.0")``, imports ``transformer_engine``. The
stand-in below is shaped exactly like it (the field checkout is not in CI).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mindspeed_ms.compat import checkpoint


def is_te_min_version(version: str) -> bool:  # megatron.core.utils: get_te_version_str imports transformer_engine
    import transformer_engine as te  # noqa: F401

    return True


def fix_fp8_params_lose_precision_when_loading_dist_ckpt(state_dict: Any) -> None:  # Megatron-LM's, shortened
    if is_te_min_version("2.0"):
        return
    for key in state_dict.keys():
        state_dict[key] = "touched"


@pytest.fixture
def no_transformer_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Transformer Engine absent (as a blocked module is: its import raises ModuleNotFoundError)."""
    monkeypatch.setitem(sys.modules, "transformer_engine", None)


@pytest.mark.usefixtures("no_transformer_engine")
def test_the_original_raises_without_transformer_engine() -> None:
    with pytest.raises(ModuleNotFoundError):
        fix_fp8_params_lose_precision_when_loading_dist_ckpt({"model": {}})


@pytest.mark.usefixtures("no_transformer_engine")
def test_without_transformer_engine_the_fix_changes_nothing_and_does_not_raise() -> None:
    wrapped = checkpoint.fp8_fix_without_te_wrapper(fix_fp8_params_lose_precision_when_loading_dist_ckpt)
    state = {"model": {"weight": 1}}
    assert wrapped(state) is None
    assert state == {"model": {"weight": 1}}
    assert wrapped.__wrapped__ is fix_fp8_params_lose_precision_when_loading_dist_ckpt


@pytest.mark.usefixtures("no_transformer_engine")
def test_other_errors_propagate() -> None:
    def fails(state_dict: Any) -> None:
        import megatron_missing_module  # noqa: F401

    with pytest.raises(ModuleNotFoundError, match="megatron_missing_module"):
        checkpoint.fp8_fix_without_te_wrapper(fails)({})


def test_with_transformer_engine_the_original_runs() -> None:
    calls: list[Any] = []
    checkpoint.fp8_fix_without_te_wrapper(calls.append)({"model": {}})
    assert calls == [{"model": {}}]
