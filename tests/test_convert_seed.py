"""The migration guide's own example: converting its PyTorch script gives its MindSpore script, up to the
differences listed (and undone one by one here) in tests/golden/seed/README.md."""

from __future__ import annotations

from pathlib import Path

from mindspeed_ms.migrate.convert import convert_script

SEED = Path(__file__).parent / "golden" / "seed"


def _guide_after() -> str:
    text = (SEED / "after.sh").read_text(encoding="utf-8")
    # 3. the guide's script path prefix
    text = text.replace("$basepath/pretrain_gpt.py", "pretrain_gpt.py")
    # 4. the guide's own port and comment
    text = text.replace("MASTER_PORT=9110", "MASTER_PORT=6000")
    text = text.replace("# MindSpore后端启动脚本", "# PyTorch后端启动脚本")
    # 5. the guide drops $DUALPIPE_ARGS
    text = text.replace("    $MTP_ARGS \\\n", "    $MTP_ARGS \\\n    $DUALPIPE_ARGS \\\n")
    # 6. the guide renames the log and adds 2>&1
    return text.replace("2>&1 | tee logs/ms_pretrain", "| tee logs/pretrain")


def _split_distributed(text: str) -> tuple[str, list[str], str]:
    head, _, rest = text.partition('DISTRIBUTED_ARGS="\n')
    block, _, tail = rest.partition('\n"\n')
    # 1. option order, 2. the trailing backslash of the last option line
    options = sorted(line.strip().removesuffix("\\").strip() for line in block.splitlines())
    return head, options, tail


def test_seed_example_converts_to_the_guides_msrun_script_up_to_the_documented_differences() -> None:
    conversion = convert_script((SEED / "before.sh").read_bytes(), name="before.sh")
    got = _split_distributed(conversion.output.decode("utf-8"))
    expected = _split_distributed(_guide_after())
    assert got[1] == expected[1]
    assert got[0] == expected[0]
    assert got[2] == expected[2]
    assert conversion.findings == ()


def test_seed_differences_are_only_the_documented_ones() -> None:
    # without undoing the documented differences the two scripts differ: the test above is not vacuous
    conversion = convert_script((SEED / "before.sh").read_bytes(), name="before.sh")
    assert conversion.output.decode("utf-8") != (SEED / "after.sh").read_text(encoding="utf-8")
    assert _split_distributed(conversion.output.decode("utf-8"))[1] != \
        _split_distributed((SEED / "before.sh").read_text(encoding="utf-8"))[1]


def test_seed_result_converts_to_itself() -> None:
    once = convert_script((SEED / "before.sh").read_bytes()).output
    assert convert_script(once).output == once


def test_dualpipe_block_assigned_as_mindspeed_llm_does_is_reported_flag_by_flag() -> None:
    # README item 5: the guide drops $DUALPIPE_ARGS; the converter keeps it and reports what it holds
    before = (SEED / "before.sh").read_text(encoding="utf-8")
    block = 'DUALPIPE_ARGS="\n    --moe-fb-overlap \\\n    --schedules-method dualpipev\n"\n\n'
    text = before.replace("python -m torch.distributed.launch", block + "python -m torch.distributed.launch")
    conversion = convert_script(text.encode(), name="before.sh")
    start = text[:text.index("DUALPIPE_ARGS=")].count("\n") + 1
    assert [(item.line, item.flag, item.status) for item in conversion.findings] == [
        (start + 1, "--moe-fb-overlap", "conditional"), (start + 2, "--schedules-method", "conditional")]
    assert all("MindSpeed-LLM" in item.reason for item in conversion.findings)
    assert "$DUALPIPE_ARGS" in conversion.output.decode()
