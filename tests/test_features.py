from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from mindspeed_ms.errors import AdaptationError, FeatureTableError
from mindspeed_ms.migrate import features
from mindspeed_ms.migrate.features import (
    FeatureRow,
    FlagUse,
    Verdict,
    feature_table,
    judge,
    load_table,
    normalize_flag,
    row_for,
    takes_value,
)

UNSUPPORTED_IN_ISSUE = [
    "--use-ascend-mc2",
    "--use-fusion-attn-v2",
    "--recompute-in-advance",
    "--recompute-in-bubble",
    "--o2-optimizer",
    "--hccl-group-buffer",
    "--disable-gloo-group",
    "--tp-2d",
    "--dualpipev-dw-detach",
    "--auto-settings",
]

# flags whose MindSpeed/Megatron argparse definition is action='store_true' vs. one that takes a value
STORE_TRUE = ["--use-ascend-mc2", "--use-fusion-attn-v2", "--recompute-in-advance", "--recompute-in-bubble",
              "--o2-optimizer", "--disable-gloo-group", "--tp-2d", "--dualpipev-dw-detach", "--auto-settings",
              "--reuse-fp32-param", "--swap-optimizer", "--use-distributed-optimizer", "--sequence-parallel",
              "--use-flash-attn", "--hccl-group-buffer-adaptive", "--swap-attention"]
TAKES_VALUE = ["--hccl-group-buffer", "--context-parallel-algo", "--moe-token-dispatcher-type",
               "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--recompute-granularity",
               "--noop-layers", "--adaptive-recompute-device-size", "--moe-model-type", "--schedules-method"]


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"flag": "--some-flag", "status": "no", "takes_value": False,
                           "reason": "Not supported.", "source": "https://example.invalid/doc",
                           "mindspeed": "2.2.0_core_r0.12.1"}
    row.update(changes)
    return row


def _write(tmp_path: Path, rows: list[Any], **top: Any) -> Path:
    data = {"schema": 1, "about": "test table", "rows": rows}
    data.update(top)
    path = tmp_path / "features.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _status(flag: str, value: str | None = None) -> str | None:
    row = row_for(flag, value)
    return None if row is None else row.status


def _shipped_json() -> dict[str, Any]:
    text = resources.files("mindspeed_ms.migrate").joinpath("features.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


# --- the shipped table ------------------------------------------------------------------------------------------


def test_shipped_table_loads_once_and_matches_the_file():
    table = feature_table()
    assert table is feature_table()
    assert all(isinstance(row, FeatureRow) for row in table)
    assert len(table) == len(_shipped_json()["rows"]) >= 30
    assert load_table(Path(features.__file__).with_name("features.json")) == table


def test_every_shipped_row_has_reason_and_source():
    for row in feature_table():
        assert row.reason.strip(), row.flag
        assert row.source.strip(), row.flag
        assert row.reason.endswith("."), f"{row.flag}: the reason is one sentence"
        assert row.status in ("no", "partial", "yes")
    sources = " ".join(row.source for row in feature_table())
    assert "Ascend/MindSpeed@2.2.0_core_r0.12.1 (a654440c):docs/mindspore/readme.md:" in sources


def test_shipped_table_has_supported_rows_too():
    statuses = {row.status for row in feature_table()}
    assert statuses == {"no", "partial", "yes"}
    assert _status("--use-distributed-optimizer") == "yes"


@pytest.mark.parametrize("flag", UNSUPPORTED_IN_ISSUE)
def test_flags_named_in_issue_are_unsupported(flag):
    row = row_for(flag)
    assert row is not None
    assert row.status == "no"
    assert not row.values


@pytest.mark.parametrize(("flag", "value"), [("--context-parallel-algo", "hybrid_cp_algo"),
                                             ("--moe-token-dispatcher-type", "allgather")])
def test_values_named_in_issue_are_unsupported_for_that_value_only(flag, value):
    row = row_for(flag, value)
    assert row is not None
    assert row.status == "no"
    assert row.values == (value,)
    other = row_for(flag, "alltoall_seq" if "dispatcher" in flag else "ulysses_cp_algo")
    assert other is not None
    assert other.status == "yes"


def test_reuse_fp32_param_needs_distributed_optimizer_and_bf16():
    row = row_for("--reuse-fp32-param")
    assert row is not None
    assert row.status == "partial"
    assert set(row.requires) == {"--use-distributed-optimizer", "--bf16"}


def test_swap_optimizer_excludes_reuse_fp32_param():
    row = row_for("--swap-optimizer")
    assert row is not None
    assert row.status == "partial"
    assert row.excludes == ("--reuse-fp32-param",)


@pytest.mark.parametrize("flag", STORE_TRUE)
def test_store_true_flags_take_no_value(flag):
    row = row_for(flag)
    assert row is not None
    assert row.takes_value is False


@pytest.mark.parametrize("flag", TAKES_VALUE)
def test_flags_with_an_argument_take_a_value(flag):
    rows = [row for row in feature_table() if row.flag == flag]
    assert rows
    assert all(row.takes_value for row in rows)


# --- judge() ----------------------------------------------------------------------------------------------------


def test_unsupported_flag_gets_an_unsupported_verdict():
    [verdict] = judge([FlagUse("--use-ascend-mc2")])
    assert isinstance(verdict, Verdict)
    assert (verdict.flag, verdict.value, verdict.status) == ("--use-ascend-mc2", None, "unsupported")
    assert verdict.reason == verdict.row.reason
    assert "MC2" in verdict.reason


def test_conditional_requirement_unmet_names_the_missing_flags():
    verdicts = judge([FlagUse("--reuse-fp32-param"), FlagUse("--tensor-model-parallel-size", "2")])
    assert verdicts[1] is None
    verdict = verdicts[0]
    assert verdict is not None
    assert verdict.status == "conditional"
    assert "--use-distributed-optimizer is not set" in verdict.reason
    assert "--bf16 is not set" in verdict.reason


def test_conditional_requirement_partly_met_names_only_what_is_missing():
    [verdict, _] = judge([FlagUse("--reuse-fp32-param"), FlagUse("--bf16")])
    assert verdict is not None
    unmet = verdict.reason.split(" Here ")[1]
    assert "--use-distributed-optimizer is not set" in unmet
    assert "--bf16" not in unmet


def test_conditional_requirement_met_is_fine():
    uses = [FlagUse("--bf16"), FlagUse("--reuse-fp32-param"), FlagUse("--use-distributed-optimizer")]
    assert judge(uses) == [None, None, None]


def test_excluded_flag_present_makes_it_conditional():
    uses = [FlagUse("--swap-optimizer"), FlagUse("--use-distributed-optimizer"), FlagUse("--reuse-fp32-param"),
            FlagUse("--bf16")]
    verdicts = judge(uses)
    assert verdicts[0] is not None
    assert verdicts[0].status == "conditional"
    assert "--reuse-fp32-param is also set" in verdicts[0].reason
    assert verdicts[1:] == [None, None, None]


def test_excluded_flag_absent_is_fine():
    assert judge([FlagUse("--swap-optimizer"), FlagUse("--use-distributed-optimizer")]) == [None, None]


def test_values_row_applies_only_to_its_values():
    uses = [FlagUse("--context-parallel-algo", "hybrid_cp_algo"), FlagUse("--context-parallel-algo", "ulysses_cp_algo"),
            FlagUse("--context-parallel-algo", None), FlagUse("--context-parallel-algo", "no_such_algo"),
            FlagUse("--moe-token-dispatcher-type", "allgather"), FlagUse("--moe-token-dispatcher-type", "alltoall_seq")]
    verdicts = judge(uses)
    assert [v.status if v else None for v in verdicts] == ["unsupported", None, None, None, "unsupported", None]
    assert verdicts[0] is not None
    assert verdicts[0].value == "hybrid_cp_algo"


def test_value_glued_with_equals_is_split():
    [verdict] = judge([FlagUse("--context-parallel-algo=hybrid_cp_algo")])
    assert verdict is not None
    assert (verdict.flag, verdict.value) == ("--context-parallel-algo", "hybrid_cp_algo")
    assert _status("--moe-token-dispatcher-type=allgather") == "no"


def test_unknown_flags_and_plain_words_are_fine():
    assert judge([FlagUse("--no-such-flag-qq"), FlagUse("pretrain_gpt.py"), FlagUse("--lr", "1e-4")]) == [None] * 3
    assert row_for("--no-such-flag-qq") is None
    assert judge([]) == []


def test_underscore_spelling_is_normalised():
    [verdict] = judge([FlagUse("--use_ascend_mc2")])
    assert verdict is not None
    assert verdict.flag == "--use-ascend-mc2"
    assert normalize_flag("--context_parallel_algo=hybrid_cp_algo") == ("--context-parallel-algo", "hybrid_cp_algo")
    assert _status("--context_parallel_algo", "hybrid_cp_algo") == "no"


def test_underscore_spelling_counts_for_requirements():
    uses = [FlagUse("--reuse_fp32_param"), FlagUse("--use_distributed_optimizer"), FlagUse("--bf16")]
    assert judge(uses) == [None, None, None]


def test_partial_row_without_conditions_is_always_conditional(tmp_path):
    table = load_table(_write(tmp_path, [_row(status="partial", reason="Works only without pipeline parallelism.")]))
    [verdict] = judge([FlagUse("--some-flag")], table=table)
    assert verdict is not None
    assert verdict.status == "conditional"
    assert verdict.reason == "Works only without pipeline parallelism."
    shipped = judge([FlagUse("--use-custom-fsdp")])[0]
    assert shipped is not None
    assert shipped.status == "conditional"


def test_values_row_wins_over_generic_row(tmp_path):
    rows = [_row(flag="--algo", takes_value=True, status="yes", reason="Fine."),
            _row(flag="--algo", takes_value=True, values=["bad"], reason="Bad value.")]
    table = load_table(_write(tmp_path, rows))
    assert row_for("--algo", "bad", table=table) == table[1]
    assert row_for("--algo", "good", table=table) == table[0]
    assert row_for("--algo", table=table) == table[0]
    assert [v.status if v else None for v in judge([FlagUse("--algo", "bad"), FlagUse("--algo", "x")], table=table)] \
        == ["unsupported", None]


# --- validation -------------------------------------------------------------------------------------------------

GOOD = [_row(flag="--first"), _row(flag="--second", takes_value=True, values=["a"])]

BROKEN_ROWS = [
    ("unknown status", _row(status="maybe"), "unknown status 'maybe'"),
    ("missing source", {k: v for k, v in _row().items() if k != "source"}, "missing source"),
    ("blank source", _row(source="   "), "source must be a non-empty string"),
    ("blank reason", _row(reason=""), "reason must be a non-empty string"),
    ("requires on a non-partial row", _row(requires=["--bf16"]), "only meaningful on a 'partial' row"),
    ("excludes on a yes row", _row(status="yes", excludes=["--bf16"]), "only meaningful on a 'partial' row"),
    ("values without takes_value", _row(values=["x"]), "takes_value is false"),
    ("empty values", _row(takes_value=True, values=[]), "values is empty"),
    ("underscore flag", _row(flag="--some_flag"), "hyphen form"),
    ("not a flag", _row(flag="some-flag"), "hyphen form"),
    ("bad requires entry", _row(status="partial", requires=["bf16"]), "requires: 'bf16'"),
    ("takes_value not bool", _row(takes_value="yes"), "takes_value must be true or false"),
    ("unknown key", _row(notes="x"), "unknown key(s) notes"),
    ("not an object", ["--x"], "must be an object"),
    ("self requirement", _row(status="partial", requires=["--some-flag"]), "its own flag"),
]


@pytest.mark.parametrize(("what", "bad", "message"), BROKEN_ROWS, ids=[case[0] for case in BROKEN_ROWS])
def test_broken_row_raises_with_its_index(tmp_path, what, bad, message):
    path = _write(tmp_path, [*GOOD, bad])
    with pytest.raises(FeatureTableError) as caught:
        load_table(path)
    error = caught.value
    assert isinstance(error, ValueError)
    assert isinstance(error, AdaptationError)
    assert error.row == 2
    assert error.path == str(path)
    assert "row 2" in str(error), str(error)
    assert message in str(error), str(error)


@pytest.mark.parametrize("duplicate", [
    _row(flag="--first"),
    _row(flag="--second", takes_value=True, values=["b", "a"]),
])
def test_duplicate_flag_and_values_raises_with_the_later_index(tmp_path, duplicate):
    with pytest.raises(FeatureTableError, match=r"row 2 .*duplicate flag\+values.*row [01]") as caught:
        load_table(_write(tmp_path, [*GOOD, duplicate]))
    assert caught.value.row == 2


def test_takes_value_must_agree_across_rows_of_a_flag(tmp_path):
    with pytest.raises(FeatureTableError, match="takes_value disagrees with row 1") as caught:
        load_table(_write(tmp_path, [*GOOD, _row(flag="--second", takes_value=False)]))
    assert caught.value.row == 2


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    (json.dumps([]), "top level must be an object"),
    (json.dumps({"schema": 2, "about": "x", "rows": []}), "'schema' must be 1"),
    (json.dumps({"schema": 1, "about": "", "rows": []}), "'about' must be"),
    (json.dumps({"schema": 1, "about": "x", "rows": {}}), "'rows' must be a list"),
])
def test_broken_file_raises_without_a_row(tmp_path, content, message):
    path = tmp_path / "features.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FeatureTableError, match=message) as caught:
        load_table(path)
    assert caught.value.row is None


def test_missing_file_raises(tmp_path):
    with pytest.raises(FeatureTableError, match="cannot be read"):
        load_table(tmp_path / "absent.json")


def test_every_shipped_row_survives_a_round_trip_through_a_file(tmp_path):
    data = copy.deepcopy(_shipped_json())
    assert load_table(_write(tmp_path, data["rows"])) == feature_table()


# --- issue 14, item 2: the flags MindSpeed-LLM's maintainers changed by hand, settled by version ------------------

def test_every_shipped_row_says_which_mindspeed_release_its_verdict_holds_for():
    for row in feature_table():
        assert row.mindspeed, row.flag
        assert any(release in row.mindspeed for release in ("2.1.0", "2.2.0", "26.0.0")), row.flag
        assert "@" in row.source, f"{row.flag}: the source names repo@branch:path:line"
        assert ":" in row.source, f"{row.flag}: the source names repo@branch:path:line"


def test_a_row_without_a_mindspeed_release_is_refused(tmp_path):
    row = _row()
    del row["mindspeed"]
    with pytest.raises(FeatureTableError, match="missing mindspeed"):
        load_table(_write(tmp_path, [row]))


@pytest.mark.parametrize(("flag", "value"), [
    ("--moe-fb-overlap", None), ("--schedules-method", "dualpipev"), ("--gemm-gradient-accumulation-fusion", None),
    ("--swap-attention", None), ("--moe-token-dispatcher-type", "alltoall")])
def test_flags_whose_sources_disagree_are_conditional_and_name_both_sources(flag, value):
    (verdict,) = judge([FlagUse(flag, value)])
    assert verdict is not None, flag
    assert verdict.status == "conditional", flag
    assert "sources disagree" in verdict.reason
    assert "MindSpeed-LLM" in verdict.reason
    assert "Ascend/MindSpeed@" in verdict.row.source
    assert "Ascend/MindSpeed-LLM" in verdict.row.source


@pytest.mark.parametrize(("flag", "value"), [
    ("--manual-gc", None), ("--manual-gc-interval", "50"), ("--overlap-grad-reduce", None),
    ("--recompute-granularity", "full"), ("--recompute-method", "uniform"), ("--recompute-num-layers", "1"),
    ("--recompute-activation-function", None), ("--moe-token-dispatcher-type", "alltoall_seq")])
def test_flags_the_sources_support_with_mindspeed_2_2_are_fine(flag, value):
    row = row_for(flag, value)
    assert row is not None
    assert row.status == "yes"
    assert "2.2.0" in row.mindspeed
    assert judge([FlagUse(flag, value)]) == [None]


def test_swap_optimizer_stays_supported_with_its_conditions():
    assert judge([FlagUse("--swap-optimizer"), FlagUse("--use-distributed-optimizer")]) == [None, None]
    (verdict, _) = judge([FlagUse("--swap-optimizer"), FlagUse("--reuse-fp32-param")])
    assert verdict is not None
    assert verdict.status == "conditional"
    assert "--use-distributed-optimizer is not set" \
        in verdict.reason


@pytest.mark.parametrize("flag", ["--manual-gc-interval", "--recompute-method", "--recompute-num-layers"])
def test_new_rows_with_an_argument_take_a_value(flag):
    assert takes_value(flag) is True
