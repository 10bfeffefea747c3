"""``mindspeed-ms parity``: does a training script compute on MindSpore what it computes on PyTorch?

    mindspeed-ms parity --reference-python ../ref/bin/python -- examples/pretrain_gpt.py --train-iters 20

The script runs unchanged on both sides (no ``import mindspeed_ms.adaptor``, no ``--ai-framework`` flag:
``mindspeed-ms run``'s bootstrap gets the adaptor in, the environment sets each side's framework), from the
caller's directory.

Exit status 0 when every step, gradient and module output is within tolerance, 1 when not, 2 on a
usage or setup error (missing interpreter, a run that failed or timed out, a script that never calls
backward, files in ``--work-dir`` the tool did not create).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from typing import Any

from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["add_arguments", "run", "format_report"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``parity`` options to ``parser``."""
    from mindspeed_ms.bootstrap.parity_runner import REFERENCE_PYTHON_ENV
    from mindspeed_ms.parity.compare import Tolerances

    defaults = Tolerances()
    parser.add_argument("--reference-python", default=None,
                        help=f"Python with real PyTorch and megatron-core (default: ${REFERENCE_PYTHON_ENV})")
    parser.add_argument("--nproc", type=int, default=1, help="processes per run (torchrun/msrun workers)")
    parser.add_argument("--work-dir", default=None,
                        help="where dumps and logs go (default: a temporary folder); the tool removes there only "
                             "what an earlier run of it created, and stops when anything else is in the way")
    parser.add_argument("--loss-rtol", type=float, default=defaults.loss)
    parser.add_argument("--grad-norm-rtol", type=float, default=defaults.grad_norm)
    parser.add_argument("--grad-rtol", type=float, default=defaults.gradient,
                        help="first-step gradient of each parameter (norm-wise relative)")
    parser.add_argument("--forward-rtol", type=float, default=defaults.forward,
                        help="first-step output of each module (norm-wise relative)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds each run may take; past it every process of that run (workers too) is ended")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--candidate-script", default=None,
                        help="another script for the MindSpore side (default: the script), building the same model")
    parser.add_argument("--candidate-args", default=None,
                        help="its arguments, one shell-quoted string (default: the script's)")
    parser.add_argument("--candidate-context-parallel", type=int, default=1, metavar="CP",
                        help="the candidate runs context parallel CP (its own flags say so) on nproc*CP workers "
                             "against the reference without it: sequence slices, CP-mean gradients, loss / CP")
    parser.add_argument("script", help="the training script (after --)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")


def _number(value: float | None, width: int) -> str:
    """``value`` in a column of ``width`` (6 decimals); ``-`` for a step without one (a pipeline stage's loss)."""
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.6f}"


def format_report(report: Any) -> str:
    """Return the report as text: per-step table per rank, worst gradients, first divergent module."""
    lines = []
    for rank in report.ranks:
        lines.append(f"rank {rank.rank}: {'OK' if rank.ok else 'DIVERGES'}")
        lines.append(f"  {'step':>4}  {'loss (PyTorch)':>14}  {'loss (MindSpore)':>16}  {'rel':>8}  "
                     f"{'grad norm (PT)':>14}  {'grad norm (MS)':>14}  {'rel':>8}")
        for step in rank.steps:
            lines.append(f"  {step.step:>4}  {_number(step.reference_loss, 14)}  {_number(step.candidate_loss, 16)}  "
                         f"{step.loss_rel:>8.1e}  {_number(step.reference_grad_norm, 14)}  "
                         f"{_number(step.candidate_grad_norm, 14)}"
                         f"  {step.grad_norm_rel:>8.1e}{'' if step.ok else '  <-- beyond tolerance'}")
        if rank.gradients:
            worst = rank.gradients[0]
            lines.append(f"  first-step gradients: {len(rank.gradients)} parameters, worst {worst.name} "
                         f"rel {worst.rel:.1e}")
        if rank.forward:
            lines.append(f"  first-step module outputs: {len(rank.forward)} compared, "
                         + (f"first divergent: {rank.first_divergent_module} rel "
                            f"{next(f.rel for f in rank.forward if f.name == rank.first_divergent_module):.1e}"
                            if rank.first_divergent_module else "all within tolerance"))
        lines.extend(f"  problem: {problem}" for problem in rank.problems)
        lines.extend(f"  note: {note}" for note in rank.notes)
    tol = report.tolerances
    lines.append(f"tolerances (relative): loss {tol.loss:g}, grad norm {tol.grad_norm:g}, gradients {tol.gradient:g}, "
                 f"module outputs {tol.forward:g}")
    lines.append(f"verdict: {'same computation' if report.ok else 'DIFFERENT computation'} "
                 f"(max loss rel {report.max_loss_rel():.1e}, max gradient rel {report.max_gradient_rel():.1e})")
    return "\n".join(lines)


def run(options: argparse.Namespace) -> int:
    """Run the comparison; print it; return 0 (same), 1 (different) or 2 (setup or run error)."""
    from mindspeed_ms.bootstrap.parity_runner import run_parity
    from mindspeed_ms.parity.compare import Tolerances

    script_args = list(options.script_args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    tolerances = Tolerances(options.loss_rtol, options.grad_norm_rtol, options.grad_rtol, options.forward_rtol)
    with tempfile.TemporaryDirectory(prefix="mindspeed-ms-parity-") as scratch:
        try:
            report = run_parity(options.script, script_args, reference_python=options.reference_python,
                                nproc=options.nproc, work_dir=options.work_dir or scratch, tolerances=tolerances,
                                timeout=options.timeout, candidate_script=options.candidate_script,
                                candidate_args=None if options.candidate_args is None
                                else shlex.split(options.candidate_args),
                                candidate_context_parallel=options.candidate_context_parallel)
        except (AdaptationError, ValueError) as exc:
            message = str(exc)
            print(f"mindspeed-ms parity: error: {message.removeprefix('parity: ')}", file=sys.stderr)
            return 2
    print(json.dumps(report.to_dict(), indent=2) if options.json else format_report(report))
    return 0 if report.ok else 1
