"""mindspeed_ms.parity: the example computes on MindSpore what it computes on PyTorch, and a wrong model is caught.

The end-to-end tests run the real thing: the example under torchrun with a CPU build of PyTorch (the reference
interpreter, ``.venv-ref`` that ``.ci/run`` builds, or ``$MINDSPEED_MS_REFERENCE_PYTHON``), then under msrun on
MindSpore + MSAdapter, and compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import EXAMPLE, free_port, is_running, reference_python, run_python, subprocess_env

from mindspeed_ms.bootstrap.parity_cli import format_report
from mindspeed_ms.bootstrap.parity_runner import (
    MANIFEST,
    ParityRunError,
    ParitySetupError,
    find_reference_python,
    run_parity,
)
from mindspeed_ms.parity.compare import Tolerances, compare_dumps, relative_difference

SOFTMAX = "decoder.layers.0.self_attention.core_attention.scale_mask_softmax"


# -- comparison of dumps (no runs) -------------------------------------------------------------------

def _dump(folder: Path, losses: list[float], grads: dict, outputs: dict) -> None:
    rank = folder / "rank0"
    rank.mkdir(parents=True)
    rank.joinpath("steps.jsonl").write_text("".join(
        json.dumps({"step": i + 1, "loss": loss, "grad_norm": 1.0 + i}) + "\n" for i, loss in enumerate(losses)))
    np.savez(rank / "grads.npz", **grads)
    np.savez(rank / "forward.npz", **outputs)
    rank.joinpath("forward_order.json").write_text(json.dumps(list(outputs)))


def test_relative_difference_is_norm_wise_and_safe_at_zero() -> None:
    assert relative_difference([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert relative_difference([1.0, 0.0], [0.0, 0.0]) == float("inf")
    assert relative_difference([3.0, 4.0 + 5e-6], [3.0, 4.0]) == pytest.approx(1e-6)
    assert relative_difference([1.0, 2.0], [1.0, 2.0, 3.0]) == float("inf")
    assert relative_difference([float("nan")], [1.0]) == float("inf")


def test_the_same_overflow_on_both_sides_is_no_difference() -> None:
    # --fp16: megatron skips a step whose gradients overflowed; both sides' gradient norms are inf there
    inf, nan = float("inf"), float("nan")
    assert relative_difference(inf, inf) == 0.0
    assert relative_difference([nan, 3.0], [nan, 3.0]) == 0.0
    assert relative_difference([inf, 3.0, 4.0 + 5e-6], [inf, 3.0, 4.0]) == pytest.approx(1e-6)
    assert relative_difference(inf, 1.0) == float("inf")
    assert relative_difference(1.0, inf) == float("inf")
    assert relative_difference(-inf, inf) == float("inf")
    assert relative_difference(nan, inf) == float("inf")


def test_compare_names_the_first_divergent_module_in_completion_order(tmp_path: Path) -> None:
    outputs = {"embedding": np.ones(4), "attention.softmax": np.ones(4), "attention": np.ones(4)}
    _dump(tmp_path / "ref", [4.0, 3.0], {"w": np.ones(3)}, outputs)
    broken = dict(outputs, **{"attention.softmax": np.full(4, 2.0), "attention": np.full(4, 3.0)})
    _dump(tmp_path / "cand", [4.0, 3.5], {"w": np.ones(3)}, broken)
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand")
    assert not report.ok
    assert report.first_divergent_module == "attention.softmax"
    assert [s.ok for s in report.ranks[0].steps] == [True, False]
    assert report.max_loss_rel() == pytest.approx(0.5 / 3.0)


def test_compare_within_tolerance_is_ok_and_beyond_it_is_not(tmp_path: Path) -> None:
    _dump(tmp_path / "ref", [4.0], {"w": np.ones(3)}, {"m": np.ones(2)})
    _dump(tmp_path / "cand", [4.0 * (1 + 5e-5)], {"w": np.ones(3) * (1 + 5e-6)}, {"m": np.ones(2)})
    assert compare_dumps(tmp_path / "ref", tmp_path / "cand").ok
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand", Tolerances(gradient=1e-6)).ok
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand", Tolerances(loss=1e-5)).ok


def test_compare_reports_missing_steps_gradients_and_ranks(tmp_path: Path) -> None:
    _dump(tmp_path / "ref", [4.0, 3.0], {"w": np.ones(3), "b": np.ones(1)}, {})
    _dump(tmp_path / "cand", [4.0], {"w": np.ones(3)}, {})
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand")
    assert not report.ok
    problems = report.ranks[0].problems
    assert any("2 steps" in p and "candidate 1" in p for p in problems)
    assert any("b only in the reference" in p for p in problems)
    (tmp_path / "ref" / "rank1").mkdir()
    assert any("rank 1" in p for r in compare_dumps(tmp_path / "ref", tmp_path / "cand").ranks for p in r.problems)


def test_the_table_shows_a_step_without_a_loss(tmp_path: Path) -> None:
    # a pipeline stage's backward (Megatron-LM's pretrain_gpt.py at pp=2): the table raised TypeError on None
    _dump(tmp_path / "ref", [None, 2.0], {"w": np.ones(2)}, {"a": np.ones(2)})
    _dump(tmp_path / "cand", [None, 2.0], {"w": np.ones(2)}, {"a": np.ones(2)})
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand")
    assert report.ok
    first, second = format_report(report).splitlines()[2:4]
    assert first.split()[:3] == ["1", "-", "-"]
    assert second.split()[:3] == ["2", "2.000000", "2.000000"]


def test_modules_of_one_side_are_notes_when_the_scripts_differ(tmp_path: Path) -> None:
    """A fused attention (MindSpeed-LLM's --use-flash-attn) has no softmax submodule: with another candidate script
    that is noted, the modules both sides record are still compared."""
    _dump(tmp_path / "ref", [4.0], {"w": np.ones(3)}, {"attention.softmax": np.ones(2), "attention": np.ones(2)})
    _dump(tmp_path / "cand", [4.0], {"w": np.ones(3)}, {"attention": np.ones(2), "attention.fused": np.ones(2)})
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand").ok
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand", modules_may_differ=True)
    assert report.ok
    assert report.ranks[0].notes == ("output of module attention.softmax only in the reference",
                                     "output of module attention.fused only in the candidate")
    _dump(tmp_path / "worse", [4.0], {"w": np.ones(3)}, {"attention": np.full(2, 2.0)})
    assert not compare_dumps(tmp_path / "ref", tmp_path / "worse", modules_may_differ=True).ok


def test_missing_reference_interpreter_is_a_setup_error_saying_what_to_install(monkeypatch) -> None:
    monkeypatch.delenv("MINDSPEED_MS_REFERENCE_PYTHON", raising=False)
    with pytest.raises(ParitySetupError, match="torch==2.13.0"):
        find_reference_python(None)
    with pytest.raises(ParitySetupError, match="not an executable"):
        find_reference_python("/nonexistent/python")


def test_a_relative_reference_interpreter_is_made_absolute_without_leaving_its_venv(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    python = Path(reference_python())
    monkeypatch.chdir(python.parent)
    found = find_reference_python(f"./{python.name}")
    assert os.path.isabs(found)
    assert Path(found).name == python.name  # not resolved to the base interpreter
    assert os.path.samefile(Path(found).parent, python.parent)


def test_cli_exits_2_with_the_reason_when_the_reference_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MINDSPEED_MS_REFERENCE_PYTHON"}
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "parity", "--work-dir", str(tmp_path), "--",
                           str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "--reference-python" in done.stderr


# -- the real thing ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tp", [1, 2])
def test_example_on_mindspore_matches_pytorch_at_every_step(tmp_path: Path, tp: int) -> None:
    report = run_parity(EXAMPLE, ["--train-iters", "20", "--tensor-model-parallel-size", str(tp)],
                        reference_python=reference_python(), nproc=tp, work_dir=tmp_path)
    assert len(report.ranks) == tp
    for rank in report.ranks:
        assert not rank.problems, rank.problems
        assert len(rank.steps) == 20
        for step in rank.steps:
            assert step.loss_rel <= 1e-4, (rank.rank, step)
            assert step.grad_norm_rel <= 1e-3, (rank.rank, step)
        assert len(rank.gradients) >= 20, rank.gradients[:3]
        assert all(g.rel <= 1e-5 for g in rank.gradients), rank.gradients[:3]
        assert len(rank.forward) > 20
        assert rank.first_divergent_module is None
    assert report.ok



def test_another_candidate_script_building_the_same_model_is_compared(tmp_path: Path) -> None:
    """MindSpeed-LLM's pretrain_gpt.py against Megatron-LM's (scripts/real_mindspeed_llm_pretrain.sh) in small: a
    different file on the MindSpore side, with arguments of its own, fed the reference's weights and batches."""
    marker = tmp_path / "candidate-ran.txt"
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent(f"""
        import pathlib, runpy, sys
        pathlib.Path({str(marker)!r}).write_text(" ".join(sys.argv[1:]))
        sys.argv[0] = {str(EXAMPLE)!r}
        sys.path.insert(0, {str(EXAMPLE.parent)!r})
        runpy.run_path({str(EXAMPLE)!r}, run_name="__main__")
    """))
    report = run_parity(EXAMPLE, ["--train-iters", "2"], reference_python=reference_python(),
                        work_dir=tmp_path / "work", candidate_script=candidate,
                        candidate_args=["--ai-framework", "mindspore", "--train-iters", "2"])
    assert marker.read_text() == "--train-iters 2"  # the framework flag is dropped, as from the script's own
    [rank] = report.ranks
    assert len(rank.steps) == 2
    assert report.ok


def test_a_missing_candidate_script_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(ParitySetupError, match="candidate script"):
        run_parity(EXAMPLE, [], work_dir=tmp_path, candidate_script=tmp_path / "absent.py")


#: the smallest model whose activations reach every host path of the ``msadapter_cpu_kernels`` provider:
#: [seq 128, batch 4, hidden 128] = 65,536 floats (layer norm, bias add), attention scores 4x4x128x128,
#: the MLP's 4x hidden (gelu), the QKV output's split (3x hidden), the logits 128x4x128 (cross entropy's
#: gradient), the gradient bucket (norm); the example's default size reaches only gelu's (every size)
HOST_PATH_SIZE = ["--hidden-size", "128", "--num-attention-heads", "4", "--seq-length", "128"]


def test_the_host_kernel_paths_compute_what_pytorch_computes_in_training(tmp_path: Path) -> None:
    from mindspeed_ms.compat import (
        bias_add,
        fast_masked_fill,
        gelu,
        host_attention,
        host_cross_entropy,
        host_layer_norm,
        host_norm,
        host_softmax,
        host_split,
    )

    activations = 128 * 4 * 128
    thresholds = (bias_add.MIN_ELEMENTS, fast_masked_fill.MIN_ELEMENTS, gelu.HOST_ELEMENTS,
                  host_layer_norm.MIN_ELEMENTS, host_norm.MIN_ELEMENTS, host_softmax.MIN_ELEMENTS,
                  host_split.MIN_ELEMENTS, host_cross_entropy.MIN_ELEMENTS)
    assert all(activations >= threshold for threshold in thresholds), thresholds
    # the attention's scores product (seq x seq x batch x heads x head dim): its halves run on two threads
    assert 128 * 128 * 4 * 4 * 32 >= host_attention.MIN_THREAD_PRODUCT
    report = run_parity(EXAMPLE, ["--train-iters", "5", *HOST_PATH_SIZE], reference_python=reference_python(),
                        work_dir=tmp_path)
    (rank,) = report.ranks
    assert not rank.problems, rank.problems
    assert len(rank.steps) == 5
    for step in rank.steps:
        assert step.loss_rel <= 1e-4, step
        assert step.grad_norm_rel <= 1e-3, step
    assert all(g.rel <= 1e-5 for g in rank.gradients), rank.gradients[:3]
    assert rank.first_divergent_module is None
    assert report.ok

def test_the_rotary_embedding_on_the_host_trains_as_pytorch_does(tmp_path: Path) -> None:
    """megatron's rope (the field's configs) through compat/host_rope.py and attention's fused Function: every
    step's loss, grad norm and the first step's gradients and module outputs as PyTorch's."""
    report = run_parity(EXAMPLE, ["--train-iters", "5", "--position-embedding-type", "rope"],
                        reference_python=reference_python(), work_dir=tmp_path)
    (rank,) = report.ranks
    assert not rank.problems, rank.problems
    assert len(rank.steps) == 5
    for step in rank.steps:
        assert step.loss_rel <= 1e-4, step
        assert step.grad_norm_rel <= 1e-3, step
    assert all(g.rel <= 1e-5 for g in rank.gradients), rank.gradients[:3]
    assert rank.first_divergent_module is None
    assert report.ok


BROKEN_SCRIPT = """
import mindspeed_ms.adaptor  # first, as in the example
import sys
from mindspeed_ms.adaptation.framework import get_ai_framework

if get_ai_framework() == "mindspore":
    from mindspore import ops
    from mindspeed_ms.compat import inplace
    import megatron.core.transformer.dot_product_attention as attention

    def old_attention_mask_func(scores, mask):
        # mindspeed_ms before the fix: masked_fill_ = out of place, then MSAdapter's copy_ into the view of the
        # attention scores, which does not reach it on the CPU backend (the causal mask is silently lost)
        inplace.unpatched_copy()(scores, ops.masked_fill(scores, mask, -10000.0))
        return scores

    attention.attention_mask_func = old_attention_mask_func  # what DotProductAttention hands to its softmax

sys.path.insert(0, {examples!r})
import pretrain_gpt
pretrain_gpt.main()
"""


def test_the_old_masked_fill_fails_parity_and_names_the_attention_softmax(tmp_path: Path) -> None:
    script = tmp_path / "broken_gpt.py"
    script.write_text(textwrap.dedent(BROKEN_SCRIPT.format(examples=str(EXAMPLE.parent))))
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "parity", "--json", "--reference-python",
                           reference_python(), "--work-dir", str(tmp_path / "work"), "--", str(script),
                           "--train-iters", "3"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["first_divergent_module"].endswith(SOFTMAX)  # under megatron's DDP wrapper: "module." first
    assert report["max_loss_rel"] > 1e-3


# -- an unchanged script: no adaptor import, a strict parser, backward without Tensor.backward -------------

STRICT_SCRIPT = '''
"""A training loop that never imports mindspeed_ms, parses its flags strictly and never calls Tensor.backward."""
import argparse
import os
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True, help="a relative path: it must resolve from the caller's directory")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--no-backward", action="store_true")
parser.add_argument("--hang-on", choices=("pytorch", "mindspore"), default=None)
parser.add_argument("--pid-file", default=None)
parser.add_argument("--pipeline", default=None, help="two stages as megatron's pipeline schedules run them; "
                    "the losses go to this file")
args = parser.parse_args()  # an unknown flag (e.g. an appended --ai-framework) exits 2

if args.hang_on and os.environ.get("MINDSPEED_AI_FRAMEWORK") == args.hang_on:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    with open(args.pid_file, "w") as stream:
        stream.write(f"{os.getpid()} {sleeper.pid}\\n")
    time.sleep(600)

import numpy as np
import torch
from megatron.core.pipeline_parallel import schedules

data = np.loadtxt(args.data, dtype=np.float32).reshape(-1, 5)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


class Stages(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.last = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
        self.input_tensor = None  # the last stage's input, received (megatron's set_input_tensor)

    def forward(self, x, stage):
        return torch.tanh(self.first(x)) if stage == 1 else self.last(self.input_tensor)


if args.pipeline:  # megatron's 1F1B on two stages, each stage's output freed once sent (deallocate_pipeline_outputs)
    model, losses = Stages(), []
    for step in range(args.steps):
        hidden = model(torch.tensor(data[:, :4]), 1)
        model.input_tensor = received = hidden.detach().requires_grad_(True)  # what the last stage receives
        loss = ((model(torch.tensor(data[:, :4]), 2) - torch.tensor(data[:, 4:])) ** 2).mean()
        losses.append(float(loss))
        schedules.deallocate_output_tensor(hidden, True)
        schedules.deallocate_output_tensor(loss, True)  # the last stage's output: one uninitialised element left
        schedules.custom_backward(loss, None)
        schedules.custom_backward(hidden, received.grad)  # the first stage, with the gradient sent back
        with torch.no_grad():
            for param in model.parameters():
                param.copy_(param - 0.1 * param.grad)
                param.grad = None
    np.savetxt(args.pipeline, losses)
    sys.exit(0)
for step in range(args.steps):
    loss = ((model(torch.tensor(data[:, :4])) - torch.tensor(data[:, 4:])) ** 2).mean()
    if args.no_backward:
        continue
    if step % 2 == 0:
        torch.autograd.backward(loss)
    else:  # megatron.training's path (deallocate_pipeline_outputs): the autograd engine called directly
        schedules.custom_backward(loss, None)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(param - 0.1 * param.grad)
            param.grad = None
'''


@pytest.fixture
def strict_script(tmp_path: Path, monkeypatch) -> Path:
    """The script and its data in ``tmp_path/caller``, which becomes the working directory (``--data data.txt``)."""
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "strict.py").write_text(STRICT_SCRIPT)
    np.savetxt(caller / "data.txt", np.random.default_rng(0).standard_normal((16, 5)))
    monkeypatch.chdir(caller)
    return caller / "strict.py"


def _parity_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "parity", "--reference-python",
                           reference_python(), *args], capture_output=True, text=True, timeout=timeout)


def test_an_unchanged_strict_script_with_relative_paths_and_custom_backward_matches(strict_script: Path,
                                                                                     tmp_path: Path) -> None:
    # the work folder is elsewhere: the runs start in the caller's directory, where data.txt is (issue 21, item 16)
    done = _parity_cli("--json", "--work-dir", str(tmp_path / "work"), "--", "strict.py", "--data", "data.txt",
                       "--ai-framework", "mindspore")  # dropped: the environment sets each side's framework
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    (rank,) = report["ranks"]
    assert [step["step"] for step in rank["steps"]] == [1, 2, 3]  # step 2 went through custom_backward
    assert all(step["loss_rel"] <= 1e-5 for step in rank["steps"]), rank["steps"]
    assert rank["steps"][0]["reference_loss"] != rank["steps"][2]["reference_loss"]  # it trained
    assert len(rank["gradients"]) == 4
    assert report["ok"]
    assert "--ai-framework" not in report["commands"]["candidate"]


def test_pipeline_stages_record_the_freed_loss_and_no_loss_for_a_stage_output(strict_script: Path,
                                                                            tmp_path: Path) -> None:
    # megatron's pipeline schedules free each output's data (deallocate_output_tensor) before its backward: the
    # loss was read from the one uninitialised element left (garbage on PyTorch, 0 on MindSpore) and the first
    # stage's backward was taken for a loss step too (Megatron-LM's pretrain_gpt.py at pp=2 "diverged")
    done = _parity_cli("--json", "--work-dir", str(tmp_path / "work"), "--", "strict.py", "--data", "data.txt",
                       "--pipeline", str(tmp_path / "losses.txt"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (rank,) = json.loads(done.stdout)["ranks"]
    losses = np.loadtxt(tmp_path / "losses.txt")  # the candidate's (written last)
    steps = rank["steps"]
    assert len(steps) == 6
    assert [s["reference_loss"] for s in steps[1::2]] == [None] * 3  # the first stage's backwards
    assert [s["candidate_loss"] for s in steps[1::2]] == [None] * 3
    np.testing.assert_allclose([s["candidate_loss"] for s in steps[0::2]], losses, rtol=1e-6)
    np.testing.assert_allclose([s["reference_loss"] for s in steps[0::2]], losses, rtol=1e-5)
    assert losses[0] != losses[2]  # it trained
    assert all(s["grad_norm_rel"] <= 1e-5 and s["reference_grad_norm"] > 0 for s in steps)


RECOMPUTE_SCRIPT = '''
import json, os, sys
import mindspeed_ms.adaptor  # PyTorch mode: the capture is installed from MINDSPEED_MS_PARITY_DIR
import torch
from torch.utils.checkpoint import checkpoint


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):  # megatron's full recompute: the block runs again inside the backward
        return self.head(checkpoint(self.block, x, use_reentrant=True)).sum()


torch.manual_seed(0)
Model()(torch.ones(2, 4, requires_grad=True)).backward()
print(open(os.path.join(sys.argv[1], "rank0", "forward_order.json")).read())
'''


def test_a_forward_recomputed_in_the_backward_is_not_recorded_again(tmp_path: Path) -> None:
    # Megatron-LM's pretrain_gpt.py with --recompute-granularity full: the reference recorded the recomputed
    # attention's submodules ("...scale_mask_softmax#2"), which MindSpore's fused host attention does not call
    # outside a recorded forward; parity reported "output ... only in the reference"
    dump = tmp_path / "dump"
    env = subprocess_env(drop=("MINDSPEED_",), MINDSPEED_AI_FRAMEWORK="pytorch", MINDSPEED_MS_PARITY_DIR=str(dump),
                         MINDSPEED_MS_PARITY_ROLE="reference")
    order = json.loads(run_python(reference_python(), "-c", RECOMPUTE_SCRIPT, str(dump), env=env, timeout=300))
    assert order == ["block.0", "block.1", "block", "head", "model"]


OVERLAP_SCRIPT = '''
import json, os, sys
import mindspeed_ms.adaptor  # PyTorch mode: the capture is installed from MINDSPEED_MS_PARITY_DIR
import numpy as np
import torch
from megatron.core import parallel_state
from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
from megatron.core.transformer import TransformerConfig

torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[2]}", rank=0, world_size=1)
parallel_state.initialize_model_parallel()
torch.manual_seed(0)
inner = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
config = TransformerConfig(num_layers=1, hidden_size=8, num_attention_heads=1)
ddp = DistributedDataParallel(config, DistributedDataParallelConfig(overlap_grad_reduce=True,
                                                                     use_distributed_optimizer=True), inner)
for buffer in ddp.buffers:  # as with two data-parallel ranks: megatron scales by 1/2 before it reduces
    for bucket in buffer.buckets:
        bucket.gradient_scaling_factor = 0.5
x = torch.linspace(-1, 1, 12).reshape(3, 4)
ddp(x).sum().backward()
expected = torch.autograd.grad(inner(x).sum(), list(inner.parameters()))
with np.load(os.path.join(sys.argv[1], "rank0", "grads.npz")) as stored:
    got = {name: stored[name] for name in stored.files}
names = [name for name, _ in ddp.named_parameters()]
print(json.dumps({name: float(np.abs(got[name] - e.numpy()).max() / np.abs(e.numpy()).max())
                  for name, e in zip(names, expected)}))
'''


def test_gradients_megatron_reduces_inside_the_backward_are_taken_before_the_reduction(tmp_path: Path) -> None:
    # Megatron-LM's pretrain_gpt.py with --overlap-grad-reduce: DDP scales (1/dp) and reduce-scatters the buckets
    # inside the backward, so the buffer read after it was half reduced on PyTorch (asynchronous) and all-reduced
    # on MindSpore (ours, synchronous): first-step gradients "differed" by 1.4 with identical losses
    dump = tmp_path / "dump"
    env = subprocess_env(drop=("MINDSPEED_",), MINDSPEED_AI_FRAMEWORK="pytorch", MINDSPEED_MS_PARITY_DIR=str(dump),
                         MINDSPEED_MS_PARITY_ROLE="reference")
    out = run_python(reference_python(), "-c", OVERLAP_SCRIPT, str(dump), str(free_port()), env=env, timeout=300)
    rel = json.loads(out.strip().splitlines()[-1])
    assert sorted(rel) == ["module.0.bias", "module.0.weight", "module.2.bias", "module.2.weight"]
    assert max(rel.values()) == 0.0, rel  # the gradients of the backward, not the scaled ones (0.5 off)


MAIN_PARAMS_SCRIPT = '''
import json, sys
import mindspeed_ms.adaptor  # PyTorch mode: the capture is installed from MINDSPEED_MS_PARITY_DIR
import torch
from megatron.core import parallel_state
from megatron.core.optimizer import OptimizerConfig
from megatron.core.optimizer.optimizer import Float16OptimizerWithFloat16Params

torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0, world_size=1)
parallel_state.initialize_model_parallel()
torch.manual_seed(int(sys.argv[2]))  # the candidate initialises other weights than the reference
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).bfloat16()
config = OptimizerConfig(optimizer="adam", lr=1e-2, bf16=True, clip_grad=0.0)
optimizer = Float16OptimizerWithFloat16Params(torch.optim.AdamW(model.parameters(), lr=1e-2), config, None, None)
x = torch.linspace(-1, 1, 12).reshape(3, 4).bfloat16()
model(x).float().sum().backward()  # the first forward: a candidate loads the reference's parameters here
optimizer.step()
print(json.dumps([p.float().flatten().tolist() for p in model.parameters()]))
'''


def test_a_candidate_refreshes_the_float32_main_parameters_of_megatrons_bf16_optimizer(tmp_path: Path) -> None:
    # Megatron-LM's pretrain_gpt.py --bf16: the first step matched, the loss after the first optimizer step differed
    # by 8.7e-3: Float16OptimizerWithFloat16Params had taken its float32 main copies from the candidate's own
    # initial weights (before the capture loaded the reference's), stepped them and copied them into the model
    port, steps = str(free_port()), {}
    for role, seed in (("reference", "0"), ("candidate", "1")):
        env = subprocess_env(drop=("MINDSPEED_",), MINDSPEED_AI_FRAMEWORK="pytorch",
                             MINDSPEED_MS_PARITY_DIR=str(tmp_path / role), MINDSPEED_MS_PARITY_ROLE=role,
                             **({"MINDSPEED_MS_PARITY_LOAD": str(tmp_path / "reference")} if role == "candidate"
                                else {}))
        out = run_python(reference_python(), "-c", MAIN_PARAMS_SCRIPT, port, seed, env=env, timeout=300)
        steps[role] = json.loads(out.strip().splitlines()[-1])
    with np.load(tmp_path / "reference" / "rank0" / "params.npz") as stored:
        initial = [stored[name].flatten() for name in ("0.weight", "0.bias", "2.weight", "2.bias")]
    assert all(np.any(np.array(p) != q) for p, q in zip(steps["reference"], initial))  # the step changed each one
    assert steps["candidate"] == steps["reference"]


def test_a_script_that_never_calls_backward_is_a_setup_error_naming_what_is_missing(strict_script: Path,
                                                                                     tmp_path: Path) -> None:
    done = _parity_cli("--work-dir", str(tmp_path / "work"), "--", "strict.py", "--data", "data.txt",
                       "--no-backward")
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "never ran a backward of a scalar loss" in done.stderr
    assert "torch.autograd.backward" in done.stderr
    assert "DIFFERENT" not in done.stdout


def test_a_timeout_ends_every_process_of_the_run_workers_and_their_children(strict_script: Path,
                                                                             tmp_path: Path) -> None:
    # (msrun's side: tests/test_parity_processes.py)
    pids = tmp_path / "pids"
    with pytest.raises(ParityRunError, match="ran past the timeout") as caught:
        run_parity(strict_script, ["--data", "data.txt", "--hang-on", "pytorch", "--pid-file", str(pids)],
                   reference_python=reference_python(), work_dir=tmp_path / "work", timeout=20)
    assert caught.value.role == "reference"
    assert caught.value.returncode == 124
    worker, sleeper = (int(pid) for pid in pids.read_text().split())  # torchrun's worker (own session), its child
    assert not is_running(worker)
    assert not is_running(sleeper)


def test_the_work_dir_keeps_what_the_tool_did_not_create_and_reuses_what_it_did(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "reference").mkdir(parents=True)
    keep = work / "reference" / "results.txt"
    keep.write_text("the user's own results\n")
    (work / "candidate.log").write_text("the user's notes\n")
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('never started')\n")
    with pytest.raises(ParitySetupError, match="reference, candidate.log, which mindspeed-ms parity did not create"):
        run_parity(script, reference_python=reference_python(), work_dir=work)
    assert keep.read_text() == "the user's own results\n"
    assert (work / "candidate.log").read_text() == "the user's notes\n"
    # what an earlier run of the tool created is its own to replace, even when the run then fails
    other = tmp_path / "other"
    with pytest.raises(ParityRunError):
        run_parity(script, reference_python=reference_python(), work_dir=other, timeout=120)
    assert (other / "reference.log").exists()
    assert json.loads((other / MANIFEST).read_text())["created"]
    with pytest.raises(ParityRunError):
        run_parity(script, reference_python=reference_python(), work_dir=other, timeout=120)
