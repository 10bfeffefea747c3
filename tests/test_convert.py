"""Unit tests of the conversion rules (mindspeed_ms.migrate.convert) on small scripts."""

from __future__ import annotations

import pytest

from mindspeed_ms.errors import LaunchScriptError, ScriptSyntaxError
from mindspeed_ms.migrate.convert import ConvertOptions, convert_script

DEFAULTS = "--log_dir=msrun_log --join=False --cluster_time_out=300 --bind_core=True"


def convert(text: str, **options: object) -> str:
    return convert_script(text.encode(), options=ConvertOptions(**options)).output.decode()  # type: ignore[arg-type]


@pytest.mark.parametrize("launcher", [
    "torchrun", "/opt/conda/bin/torchrun", "python -m torch.distributed.launch", "python3 -m torch.distributed.run",
    "python3.10 -u -m torch.distributed.run", "$PYTHON -m torch.distributed.launch",
    "/usr/bin/python3 -m torch.distributed.launch"])
def test_every_launcher_spelling_becomes_msrun(launcher: str) -> None:
    out = convert(f"{launcher} --nproc_per_node 2 train.py --lr 1\n")
    assert out == f"msrun --local_worker_num 2 --worker_num=2 {DEFAULTS} train.py --lr 1 --ai-framework mindspore\n"


def test_env_prefix_and_env_command_are_kept() -> None:
    assert convert("A=1 B=2 torchrun t.py\n").startswith("A=1 B=2 msrun --local_worker_num=1 --worker_num=1 ")
    assert convert("env A=1 torchrun t.py\n").startswith("env A=1 msrun --local_worker_num=1 --worker_num=1 ")


def test_no_nproc_writes_one_worker_explicitly() -> None:
    assert convert("torchrun train.py\n") == \
        f"msrun --local_worker_num=1 --worker_num=1 {DEFAULTS} train.py --ai-framework mindspore\n"


def test_hyphen_spellings_are_normalised_and_rdzv_options_removed_with_values() -> None:
    out = convert("torchrun --nproc-per-node 4 --node-rank 0 --master-addr h --master-port 1 "
                  "--rdzv_backend c10d --rdzv-endpoint=h:1 --max_restarts 3 t.py\n")
    assert out.startswith("msrun --local_worker_num 4 --node_rank 0 --master_addr h --master_port 1 --worker_num=4 ")
    assert "rdzv" not in out
    assert "max_restarts" not in out


def test_removed_option_lines_take_their_continuation_with_them() -> None:
    script = "torchrun \\\n    --nproc_per_node 2 \\\n    --rdzv_backend c10d \\\n    --max_restarts 1 \\\n    t.py\n"
    out = convert(script)
    assert out.startswith("msrun \\\n    --local_worker_num 2 \\\n    --worker_num=2 \\\n    --log_dir=msrun_log \\\n")
    assert "\\\n    t.py \\\n    --ai-framework mindspore\n" in out


def test_standalone_becomes_single_node_with_local_master() -> None:
    out = convert("torchrun --standalone --nproc_per_node=4 t.py\n")
    assert out.startswith("msrun --local_worker_num=4 --worker_num=4 --master_addr=127.0.0.1 ")
    assert "standalone" not in out


def test_elastic_nnodes_is_reported_and_left() -> None:
    conversion = convert_script(b"torchrun --nnodes 1:4 --nproc_per_node 8 t.py\n")
    assert b"--nnodes 1:4" in conversion.output
    assert [(f.status, f.flag, f.line, f.column) for f in conversion.findings] == \
        [("unconvertible", "--nnodes", 1, 10)]
    assert conversion.exit_code() == 1


def test_module_launch_and_unknown_options_are_unconvertible() -> None:
    conversion = convert_script(b"torchrun -m pkg.train --lr 1\n")
    assert [f.status for f in conversion.findings] == ["unconvertible"]
    conversion = convert_script(b"torchrun --frobnicate 1 t.py\n")
    assert conversion.findings[0].flag == "--frobnicate"


def test_unassigned_options_variable_in_launcher_position_is_reported() -> None:
    conversion = convert_script(b"torchrun $LAUNCH_OPTS train.py\n")
    assert conversion.findings[0].status == "unconvertible"
    assert "$LAUNCH_OPTS" in conversion.findings[0].flag


def test_ai_framework_is_added_before_redirections_and_pipes() -> None:
    piped = convert("torchrun t.py --x 1 2>&1 | tee log\n")
    assert piped.endswith(" t.py --x 1 --ai-framework mindspore 2>&1 | tee log\n")
    chained = convert("torchrun t.py > out.log && echo ok\n")
    assert chained.endswith("t.py --ai-framework mindspore > out.log && echo ok\n")


def test_ai_framework_pytorch_value_is_switched() -> None:
    assert convert("torchrun t.py --ai-framework pytorch\n").endswith("t.py --ai-framework mindspore\n")
    assert convert("torchrun t.py --ai-framework=pytorch\n").endswith("t.py --ai-framework=mindspore\n")
    out = convert('A="--ai-framework pytorch"\ntorchrun t.py $A\n')
    assert out.startswith('A="--ai-framework mindspore"\n')
    assert out.count("--ai-framework") == 1


def test_mentions_in_comments_and_echo_are_untouched() -> None:
    script = '# torchrun --nproc_per_node 8 x.py\necho "run torchrun now"\nprintf torchrun\n'
    conversion = convert_script(script.encode())
    assert conversion.output == script.encode()
    assert conversion.launches == 0


def test_unsupported_flags_reported_with_line_and_dropped_on_request() -> None:
    script = ('ARGS="\n    --use-ascend-mc2 \\\n    --hccl-group-buffer \\"dp:3;tp:1\\" \\\n    --seq-length 8\n"\n'
              "torchrun t.py $ARGS\n")
    conversion = convert_script(script.encode())
    assert [(f.line, f.flag, f.status) for f in conversion.findings] == [
        (2, "--use-ascend-mc2", "unsupported"), (3, "--hccl-group-buffer", "unsupported")]
    dropped = convert_script(script.encode(), options=ConvertOptions(drop_unsupported=True))
    assert dropped.findings == ()
    assert dropped.output.decode().startswith('ARGS="\n    --seq-length 8\n"\n')
    assert sum("dropped" in reason for change in dropped.changes for reason in change.reasons) >= 1


def test_conditional_flag_is_quiet_when_its_condition_holds() -> None:
    needs = "torchrun t.py --reuse-fp32-param {}\n"
    assert [f.status for f in convert_script(needs.format("").encode()).findings] == ["conditional"]
    assert convert_script(needs.format("--use-distributed-optimizer --bf16").encode()).findings == ()


def test_flags_only_in_variables_that_never_reach_a_launch_are_unused() -> None:
    conversion = convert_script(b'OLD="--use-ascend-mc2"\nNEW="--bf16"\ntorchrun t.py $NEW\n')
    assert [(f.status, f.line) for f in conversion.findings] == [("unused", 1)]
    assert conversion.exit_code() == 0  # unused is information, not a problem


def test_flags_set_in_either_branch_reach_the_launch() -> None:
    script = 'if [ "$X" = 1 ]; then\n  A="--tp-2d"\nelse\n  A="--bf16"\nfi\ntorchrun t.py $A\n'
    assert [(f.line, f.flag) for f in convert_script(script.encode()).findings] == [(2, "--tp-2d")]


def test_an_assignment_overwritten_at_top_level_before_the_launch_does_not_reach_it() -> None:
    script = ('A="--use-ascend-mc2"\nA="--bf16"\nif [ "$X" = 1 ]; then\n  A="--tp-2d"\nfi\n'
              "torchrun t.py $A\n")
    findings = [(f.line, f.flag, f.status) for f in convert_script(script.encode()).findings]
    assert findings == [(1, "--use-ascend-mc2", "unused"), (4, "--tp-2d", "unsupported")]


def test_a_variable_reassigned_before_each_launch_gives_each_launch_only_its_own_value() -> None:
    from mindspeed_ms.migrate import bash
    from mindspeed_ms.migrate.edits import EditPlan
    from mindspeed_ms.migrate.launch import LaunchReader

    lines = [f'BUF="dp:{index}"\ntorchrun t.py --hccl-group-buffer "$BUF"\n' for index in range(50)]
    source = "".join(lines).encode()
    reader = LaunchReader(source, bash.parse(source).root_node, EditPlan(source), [])
    launches = reader.launches()
    assert len(launches) == 50
    # each launch sees one assignment (the one in effect), not every earlier one: linear, not quadratic
    assert all([d.words[0].value for d in reader.definitions("BUF", launch.launcher.start, every=True)]
               == [f"dp:{index}"] for index, launch in enumerate(launches))
    findings = convert_script(source).findings
    assert [(f.line, f.flag) for f in findings] == [(2 * index + 2, "--hccl-group-buffer") for index in range(50)]


def test_append_assignments_are_followed() -> None:
    script = "D=(--nproc_per_node 2)\nD+=(--nnodes 2)\ntorchrun \"${D[@]}\" t.py\n"
    out = convert(script)
    assert out.startswith("D=(--local_worker_num 2 --log_dir=msrun_log")
    assert out.splitlines()[1] == "D+=(--worker_num 4)"


def test_options_are_overridable() -> None:
    out = convert("torchrun t.py\n", log_dir="logs/ms", join="True", cluster_time_out="60", bind_core="False")
    assert "--log_dir=logs/ms --join=True --cluster_time_out=60 --bind_core=False" in out


def test_existing_msrun_options_are_not_added_twice() -> None:
    out = convert("torchrun --nproc_per_node 2 --log_dir=my --join=True t.py\n")
    assert out.count("--log_dir") == 1
    assert out.count("--join") == 1
    assert "--log_dir=my" in out


def test_heredoc_and_shell_string_launches_are_reported_not_converted() -> None:
    script = "ssh n1 <<EOF\ncd /w && torchrun --nproc_per_node 8 t.py\nEOF\nbash -c 'torchrun t.py'\n"
    conversion = convert_script(script.encode())
    assert conversion.output == script.encode()
    assert [(f.line, f.status, f.flag) for f in conversion.findings] == \
        [(2, "unconvertible", "torchrun"), (4, "unconvertible", "torchrun")]


def test_syntax_errors_have_line_and_column() -> None:
    with pytest.raises(ScriptSyntaxError) as caught:
        convert_script(b"echo ok\nif true; then\n  torchrun t.py\n")
    assert caught.value.line >= 2
    assert caught.value.column >= 1
    assert isinstance(caught.value, LaunchScriptError)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ScriptSyntaxError, match=r"<script>:2:"):
        convert_script(b"echo ok\necho (\n")


def test_bash_n_rejection_is_a_syntax_error_even_when_tree_sitter_accepts() -> None:
    # tree-sitter reads a bare `done` as a command word; bash refuses it
    script = b"echo a\ndone\n"
    with pytest.raises(ScriptSyntaxError) as caught:
        convert_script(script)
    assert caught.value.line == 2


def test_changes_describe_whole_lines_before_and_after() -> None:
    conversion = convert_script(b"# x\ntorchrun --nproc_per_node 2 t.py\n")
    assert [(c.line, c.before) for c in conversion.changes] == [(2, "torchrun --nproc_per_node 2 t.py")]
    assert conversion.changes[0].after.startswith("msrun --local_worker_num 2 --worker_num=2 ")
    assert conversion.changes[0].reasons


# --- issue 14 --------------------------------------------------------------------------------------------

def _argv_seen_by_msrun(script: str) -> list[str]:
    """Run a converted script with ``msrun`` as a shell function that prints the words it receives."""
    import subprocess

    prelude = "msrun() { printf '%s\\n' \"$@\"; }\n"
    result = subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, check=True, timeout=30)
    return result.stdout.splitlines()


@pytest.mark.parametrize("script", [
    "torchrun --nproc_per_node 2 t.py\n",
    'DIST="--nproc_per_node 2 --nnodes 1"\ntorchrun $DIST t.py\n',
    'DIST=(--nproc_per_node 2)\ntorchrun "${DIST[@]}" t.py\n',
    "torchrun t.py\n",
])
def test_option_value_with_blanks_reaches_msrun_as_one_word(script: str) -> None:
    out = convert(script, log_dir="/data/my logs")
    assert "--log_dir=/data/my logs" in _argv_seen_by_msrun(out)
    assert convert(out, log_dir="/data/my logs") == out


@pytest.mark.parametrize(("options", "named"), [
    ({"cluster_time_out": "5; x"}, "--cluster-time-out"), ({"cluster_time_out": "0"}, "--cluster-time-out"),
    ({"cluster_time_out": "1.5"}, "--cluster-time-out"), ({"join": "yes"}, "--join"),
    ({"bind_core": "1"}, "--bind-core"), ({"log_dir": ""}, "--log-dir"), ({"log_dir": "a\nb"}, "--log-dir")])
def test_invalid_option_values_are_refused_with_the_option_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(LaunchScriptError, match=named):
        ConvertOptions(**options)  # type: ignore[arg-type]


def test_launch_without_a_script_is_reported_and_converts_the_same_under_every_hash_seed() -> None:
    import os
    import subprocess
    import sys

    code = ("import sys; from mindspeed_ms.migrate.convert import convert_script; "
            "sys.stdout.buffer.write(convert_script(b'torchrun --nproc_per_node 8\\n').output)")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(8)}
    assert len(outputs) == 1
    (out,) = outputs
    assert out == f"msrun --local_worker_num 8 --worker_num=8 {DEFAULTS}\n".encode()
    conversion = convert_script(out)
    assert conversion.output == out  # idempotent
    assert [(item.line, item.flag, item.status) for item in conversion.findings] == [(1, "msrun", "unconvertible")]
    assert "no training script" in conversion.findings[0].reason


def _findings(text: str) -> list[tuple[int, str, str, str | None]]:
    conversion = convert_script(text.encode())
    return [(item.line, item.flag, item.status, item.value) for item in conversion.findings]


@pytest.mark.parametrize("value", ["${CP_ALGO}", "$CP_ALGO", '"$CP_ALGO"', '"${CP_ALGO}"'])
def test_flag_value_given_through_a_variable_is_judged_by_the_variables_value(value: str) -> None:
    text = f"CP_ALGO=hybrid_cp_algo\ntorchrun t.py --context-parallel-algo {value}\n"
    assert _findings(text) == [(2, "--context-parallel-algo", "unsupported", "hybrid_cp_algo")]
    assert _findings(text.replace("hybrid_cp_algo", "ulysses_cp_algo")) == []


def test_flag_value_variable_inside_an_arguments_string_is_followed() -> None:
    text = ('DISP=allgather\nGPT_ARGS="\n    --moe-token-dispatcher-type ${DISP} \\\n    --seq-length 8\n"\n'
            "torchrun t.py $GPT_ARGS\n")
    assert _findings(text) == [(3, "--moe-token-dispatcher-type", "unsupported", "allgather")]
    dropped = convert(text, drop_unsupported=True)
    assert "--moe-token-dispatcher-type" not in dropped
    assert "--seq-length 8" in dropped


def test_flag_value_variable_is_followed_through_branches_and_chains() -> None:
    text = ("if [ -n \"$HYBRID\" ]; then\n  ALGO=hybrid_cp_algo\nelse\n  ALGO=megatron_cp_algo\nfi\n"
            "CP=$ALGO\ntorchrun t.py --context-parallel-algo $CP\n")
    assert _findings(text) == [(7, "--context-parallel-algo", "unsupported", "hybrid_cp_algo")]


def test_flag_value_variable_in_a_string_that_never_reaches_a_launch_is_unused() -> None:
    text = 'DISP=allgather\nMOE_ARGS="--moe-token-dispatcher-type $DISP"\ntorchrun t.py --bf16\n'
    assert _findings(text) == [(2, "--moe-token-dispatcher-type", "unused", None)]


def _many_launches(count: int) -> bytes:
    lines = ["A=8", "B=2", "W=$(($A*$B))", 'D="--nproc_per_node $A --nnodes $B"']
    for index in range(count):
        lines += [f"S_{index}={index}", f"torchrun $D t.py --seed $S_{index}"]
    return ("\n".join(lines) + "\n").encode()


def test_work_per_launch_does_not_grow_with_the_number_of_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    # counts, not time: the world-size lookup used to scan every assignment of the script for every launch
    from mindspeed_ms.migrate import world_size as module

    calls = {"n": 0}
    original = module.product_operands

    def counting(node: object, source: bytes) -> object:
        calls["n"] += 1
        return original(node, source)

    monkeypatch.setattr(module, "product_operands", counting)
    work = {}
    for count in (50, 200):
        calls["n"] = 0
        conversion = convert_script(_many_launches(count), use_bash=False)
        assert conversion.launches == count
        work[count] = calls["n"]
    assert work[200] <= 4 * work[50] + 10


def test_change_lines_stay_right_across_many_launches() -> None:
    conversion = convert_script(_many_launches(300), use_bash=False)
    launch_changes = [change for change in conversion.changes if change.before.startswith("torchrun")]
    assert [change.line for change in launch_changes] == [6 + 2 * index for index in range(300)]
    assert all(change.after == f"msrun $D t.py --seed $S_{index} --ai-framework mindspore"
               for index, change in enumerate(launch_changes))
    assert 'D="--local_worker_num $A --worker_num $W' in conversion.output.decode()


def test_nnodes_shared_by_launches_of_different_world_sizes_is_reported_not_a_crash() -> None:
    text = ('GPT_ARGS="\n    --nnodes \\\n    8 \\\n"\ntorchrun --nproc_per_node 8 $GPT_ARGS t.py\n'
            "torchrun --nproc_per_node 2 $GPT_ARGS t.py\n")
    conversion = convert_script(text.encode())
    assert [(item.line, item.flag, item.status) for item in conversion.findings] == [(2, "--nnodes", "unconvertible")]
    assert "64 and 16" in conversion.findings[0].reason
