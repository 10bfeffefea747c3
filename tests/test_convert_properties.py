"""Property tests of convert-launch (Hypothesis): conversion edits only launch commands and the assignments
that feed them, leaves every other byte alone, yields valid bash, and is idempotent."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_ms.migrate import bash, torchrun
from mindspeed_ms.migrate.convert import convert_script
from mindspeed_ms.migrate.edits import apply_edits

NAMES = st.sampled_from(["DIST", "DISTRIBUTED_ARGS", "GPT_ARGS", "EXTRA", "MEM_ARGS"])
VALUES = st.sampled_from(["8", "2", "$NPUS", "${NNODES}", "6000", "localhost", "c10d", "0"])
OPTIONS = st.sampled_from([
    "--nproc_per_node", "--nproc-per-node", "--nnodes", "--node_rank", "--master-addr", "--master_port",
    "--rdzv_backend", "--max_restarts", "--standalone", "--use-ascend-mc2", "--bf16", "--seq-length",
    "--hccl-group-buffer", "--reuse-fp32-param", "--tp-2d"])
NOISE = st.sampled_from([
    "# torchrun --nproc_per_node 8 train.py", 'echo "launching torchrun now"', "cd /workspace",
    "export HCCL_CONNECT_TIMEOUT=1200", "", "source /usr/local/Ascend/set_env.sh", "printf '%s\\n' torchrun",
    "mkdir -p logs", "NPUS=8", "NNODES=2"])


@st.composite
def words(draw: st.DrawFn) -> list[str]:
    out = []
    for option in draw(st.lists(OPTIONS, max_size=5)):
        out.append(option)
        name = torchrun.canonical(option)
        if name not in ("standalone", "use_ascend_mc2", "bf16", "reuse_fp32_param", "tp_2d"):
            out.append(draw(VALUES))
    return out


@st.composite
def assignment(draw: st.DrawFn) -> str:
    name, items = draw(NAMES), draw(words())
    style = draw(st.sampled_from(["multi", "single", "array", "raw"]))
    if style == "multi":
        return f'{name}="\n' + "".join(f"    {item} \\\n" for item in items) + '"'
    if style == "single":
        return f'{name}="{" ".join(items)}"'
    if style == "array":
        return f"{name}=(" + " ".join(items) + ")"
    return f"{name}='{' '.join(item for item in items if '$' not in item)}'"


@st.composite
def launch(draw: st.DrawFn) -> str:
    launcher = draw(st.sampled_from([
        "torchrun", "python -m torch.distributed.launch", "python3 -m torch.distributed.run",
        "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun", "/usr/bin/torchrun", "msrun"]))
    name = draw(NAMES)
    reference = draw(st.sampled_from([f"${name}", f'"${{{name}[@]}}"', ""]))
    inline = " ".join(draw(words()))
    args = " ".join(draw(words()))
    tail = draw(st.sampled_from(["", " | tee logs/x.log", " 2>&1 | tee logs/x.log", " > out.log"]))
    separator = draw(st.sampled_from([" ", " \\\n    "]))
    line = separator.join(part for part in [launcher, inline, reference, "pretrain_gpt.py", args] if part) + tail
    return draw(st.sampled_from([line, f"if [ -n \"$RUN\" ]; then\n  {line}\nfi"]))


@st.composite
def script(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.one_of(NOISE, assignment(), launch()), min_size=1, max_size=10))
    return "#!/bin/bash\n" + "\n".join(pieces) + "\n"


def _editable_ranges(source: bytes) -> list[tuple[int, int]]:
    tree = bash.parse(source)
    ranges = []
    for node in bash.iter_nodes(tree.root_node):
        if node.type == "command" and torchrun.match_launcher(node, source) is not None:
            ranges.append((node.start_byte, node.end_byte))
        elif node.type == "variable_assignment" and node.child_by_field_name("value") is not None:
            value = node.child_by_field_name("value")
            ranges.append((value.start_byte, value.end_byte))
    return ranges


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script(), st.booleans())
def test_conversion_changes_no_byte_outside_launches_and_their_assignments(text: str, drop: bool) -> None:
    from mindspeed_ms.migrate.convert import ConvertOptions

    source = text.encode()
    conversion = convert_script(source, options=ConvertOptions(drop_unsupported=drop))
    assert apply_edits(source, list(conversion.edits)) == conversion.output
    ranges = _editable_ranges(source)
    for edit in conversion.edits:
        assert any(low <= edit.start and edit.end <= high for low, high in ranges), (edit, text)
    # every noise line (comments and echo strings that mention torchrun included) survives byte for byte
    for line in text.splitlines():
        if line.startswith(("#", "echo", "printf", "cd ", "export", "source", "mkdir")):
            assert line in conversion.output.decode().splitlines()
    again = convert_script(conversion.output, options=ConvertOptions(drop_unsupported=drop))
    assert again.output == conversion.output
