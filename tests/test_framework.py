"""Tests of mindspeed_ms.adaptation.framework: the --ai-framework switch and MindSpeed-style flag parsing."""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

import pytest

from mindspeed_ms.adaptation.framework import ProviderArgs, get_ai_framework, get_args, with_declared_flags
from mindspeed_ms.errors import FrameworkError


def test_default_framework_is_pytorch() -> None:
    assert get_ai_framework(argv=["--num-layers", "2"], environ={}) == "pytorch"


@pytest.mark.parametrize(
    "argv",
    [
        ["--ai-framework", "mindspore"],
        ["--ai-framework=mindspore"],
        ["--x", "1", "--ai-framework", "MindSpore"],
    ],
)
def test_flag_selects_mindspore_in_both_spellings(argv: list[str]) -> None:
    assert get_ai_framework(argv=argv, environ={}) == "mindspore"


def test_last_flag_wins_like_argparse() -> None:
    argv = ["--ai-framework", "mindspore", "--ai-framework=pytorch"]
    assert get_ai_framework(argv=argv, environ={}) == "pytorch"
    assert get_ai_framework(argv=["--ai-framework=pytorch", "--ai-framework", "mindspore"], environ={}) == (
        "mindspore"
    )


def test_environment_variable_is_used_when_flag_is_absent() -> None:
    assert get_ai_framework(argv=[], environ={"MINDSPEED_AI_FRAMEWORK": "mindspore"}) == "mindspore"


def test_flag_takes_precedence_over_environment() -> None:
    env = {"MINDSPEED_AI_FRAMEWORK": "mindspore"}
    assert get_ai_framework(argv=["--ai-framework", "pytorch"], environ=env) == "pytorch"


def test_invalid_flag_value_lists_the_choices() -> None:
    with pytest.raises(FrameworkError) as info:
        get_ai_framework(argv=["--ai-framework", "tensorflow"], environ={})
    message = str(info.value)
    assert "'tensorflow'" in message
    assert "'pytorch'" in message
    assert "'mindspore'" in message
    assert isinstance(info.value, ValueError)


def test_invalid_environment_value_names_the_variable() -> None:
    with pytest.raises(FrameworkError, match="MINDSPEED_AI_FRAMEWORK"):
        get_ai_framework(argv=[], environ={"MINDSPEED_AI_FRAMEWORK": "jax"})


def test_flag_without_value_is_an_error() -> None:
    with pytest.raises(FrameworkError, match="needs a value"):
        get_ai_framework(argv=["--ai-framework"], environ={})


def test_nothing_after_double_dash_is_read() -> None:
    assert get_ai_framework(argv=["--", "--ai-framework", "mindspore"], environ={}) == "pytorch"


def test_sys_argv_is_read_and_left_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["train.py", "--ai-framework", "mindspore", "--lr", "0.1"]
    monkeypatch.setattr(sys, "argv", list(argv))
    monkeypatch.delenv("MINDSPEED_AI_FRAMEWORK", raising=False)
    assert get_ai_framework() == "mindspore"
    assert get_args().lr == "0.1"
    assert sys.argv == argv


def test_get_args_reads_every_flag_like_mindspeed() -> None:
    argv = ["--num-layers", "2", "--use-ascend-coc", "--lr=1e-3", "--seq", "1", "2"]
    args = get_args([*argv, "--ai-framework", "mindspore"])
    assert args.num_layers == "2"
    assert args.use_ascend_coc is True
    assert args.lr == "1e-3"
    assert args.seq == ["1", "2"]
    assert args.ai_framework == "mindspore"
    assert args.hidden_size is None  # Megatron-style: an absent flag reads as None


def test_get_args_keeps_negative_numbers_as_values_and_last_repeat() -> None:
    args = get_args(["--min-lr", "-1.5", "--seed", "1", "--seed", "7", "--"])
    assert args.min_lr == "-1.5"
    assert args.seed == "7"


def test_get_args_ignores_leading_positionals_and_double_dash_tail() -> None:
    args = get_args(["data.bin", "--flag", "--", "--after", "1"])
    assert vars(args) == {"flag": True}


def declare_mindspore_flags(group: Any) -> None:
    """Shaped like MindSpeed-LLM's ``mindspore_register_args(group)``."""
    group.add_argument("--enable-a2avc", type=int, choices=[0, 1, 2], default=0)
    group.add_argument("--enable-share-memory", action="store_true", default=False)
    group.add_argument("--seq1f1b-splits", type=int, default=4)


def test_declared_flags_have_their_types_and_defaults() -> None:
    args = get_args(["--enable-a2avc", "0", "--seq1f1b-splits", "4", "--lr", "0.1"],
                    declarations=[declare_mindspore_flags])
    assert args.enable_a2avc == 0
    assert not args.enable_a2avc  # the string '0' would be truthy
    assert args.seq1f1b_splits == 4
    assert isinstance(args.seq1f1b_splits, int)
    assert args.enable_share_memory is False  # absent: its declared default
    assert args.lr == "0.1"  # undeclared: read as given
    assert args.moe_fb_overlap is None  # neither given nor declared


def test_undeclared_flags_keep_the_untyped_reading() -> None:
    args = get_args(["--enable-a2avc", "0"])
    assert args.enable_a2avc == "0"


def test_declared_flag_with_a_bad_value_is_a_framework_error() -> None:
    with pytest.raises(FrameworkError, match="seq1f1b-splits"):
        get_args(["--seq1f1b-splits", "four"], declarations=[declare_mindspore_flags])


def test_private_names_still_raise_attribute_error() -> None:
    args = get_args([])
    with pytest.raises(AttributeError):
        args.__len__  # noqa: B018 - the attribute access is the test
    assert copy.copy(args) is not args


def test_full_namespace_keeps_its_values_and_gains_missing_declared_flags_on_the_view_only() -> None:
    megatron_args = argparse.Namespace(seq1f1b_splits=8)
    view = with_declared_flags(ProviderArgs(megatron_args), [declare_mindspore_flags], argv=["--seq1f1b-splits", "2"])
    assert view.seq1f1b_splits == 8
    assert view.enable_a2avc == 0
    assert vars(megatron_args) == {"seq1f1b_splits": 8}  # the user's namespace is never written
    cli_args = get_args(["--seq1f1b-splits", "2"])
    cli_view = with_declared_flags(ProviderArgs(cli_args), [declare_mindspore_flags], argv=["--seq1f1b-splits", "2"])
    assert cli_view.seq1f1b_splits == 2
    assert cli_args.seq1f1b_splits == "2"
