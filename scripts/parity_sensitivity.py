"""How far does the PyTorch reference drift from ITSELF when a run is perturbed by ``--eps`` (relative)?

``mindspeed-ms parity`` compares MindSpore with PyTorch step by step (loss 1e-4, grad norm 1e-3 relative). The two
frameworks differ op by op by ~1e-6 (float32 rounding, reduction order), and an unstable training run amplifies any
such difference step after step. This script measures that amplification on the reference alone: it trains the
example twice on real PyTorch (one process, world size 1), once as is and once with a relative perturbation of
size ``--eps`` (seeded, random sign and magnitude), and prints the per-step relative differences of loss and grad
norm. If the reference's own drift exceeds the parity tolerances, a MindSpore run that drifts as far is computing
the same thing, and the parity tolerance at that length is the wrong question.

    .venv-ref/bin/python scripts/parity_sensitivity.py [--perturb weights|grads|outputs] [--eps 1e-6]
        [--parity-dir DIR] [--json] -- examples/pretrain_gpt.py --train-iters 10 --hidden-size 512 ...

Perturbations (zero-valued entries, e.g. initial biases, stay zero; the perturbation is relative):
  weights  every parameter once, after the model is built (initial weights off by ~eps);
  grads    every parameter's gradient at every step, before the optimizer (clipping, Adam) sees it;
  outputs  every module's tensor output at every forward call (what per-op differences look like).
``--parity-dir`` (a ``mindspeed-ms parity --work-dir``) adds the MindSpore-vs-PyTorch difference per step.

Exit status: 0 when the perturbed reference stays within the tolerances at every step, 1 when it does not
(the reference itself cannot meet them at this size and length), 2 on a usage error or a failed run.
The example must be a megatron training script shaped like examples/pretrain_gpt.py: module-level
``build_model(args) -> (config, model)``, ``get_megatron_optimizer``, ``report_loss`` and ``main(argv)``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PERTURBATIONS = ("weights", "grads", "outputs")


def _relative_noise(tensor: Any, eps: float, generator: Any) -> Any:
    import torch

    noise = torch.empty(tensor.shape, dtype=torch.float32).uniform_(-1.0, 1.0, generator=generator)
    return tensor * (1.0 + eps * noise.to(tensor.dtype))


def _child(example: Path, perturb: str, eps: float, seed: int, steps_file: Path, argv: list[str]) -> None:
    """Train the example in this process (PyTorch, world size 1), perturbed, and write one JSON line per step."""
    import torch

    sys.path.insert(0, str(example.parent))
    spec = importlib.util.spec_from_file_location("_parity_sensitivity_example", example)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {example}")
    module: Any = importlib.util.module_from_spec(spec)  # the example's functions, looked up by name
    spec.loader.exec_module(module)
    generator = torch.Generator().manual_seed(seed)
    models: list[Any] = []
    records: list[dict[str, float]] = []

    original_build = module.build_model

    def build_model(args: Any) -> Any:
        config, model = original_build(args)
        models.append(model)
        if eps and perturb == "weights":
            with torch.no_grad():
                for param in model.parameters():
                    param.copy_(_relative_noise(param, eps, generator))
        if eps and perturb == "outputs":
            def perturb_output(_module: Any, _inputs: Any, output: Any) -> Any:
                if isinstance(output, torch.Tensor) and output.is_floating_point():
                    return _relative_noise(output, eps, generator)
                return output
            for submodule in model.modules():
                submodule.register_forward_hook(perturb_output)
        return config, model

    original_get_optimizer = module.get_megatron_optimizer

    def get_megatron_optimizer(*args: Any, **kwargs: Any) -> Any:
        optimizer = original_get_optimizer(*args, **kwargs)
        original_step = optimizer.step

        def step() -> Any:
            if eps and perturb == "grads":
                with torch.no_grad():
                    for model in models:
                        for param in model.parameters():
                            grad = getattr(param, "main_grad", None)
                            if grad is not None:
                                grad.copy_(_relative_noise(grad, eps, generator))
            result = original_step()
            records.append({"grad_norm": float(result[1] or 0.0)})
            return result

        optimizer.step = step
        return optimizer

    original_report = module.report_loss

    def report_loss(losses_reduced: Any) -> float:
        value = float(original_report(losses_reduced))
        records[-1]["loss"] = value
        return value

    module.build_model = build_model
    module.get_megatron_optimizer = get_megatron_optimizer
    module.report_loss = report_loss
    module.main(argv)
    with steps_file.open("w") as out:
        for step, record in enumerate(records, 1):
            out.write(json.dumps({"step": step, **record}) + "\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(python: str, example: Path, perturb: str, eps: float, seed: int, argv: list[str],
         work: Path) -> list[dict[str, float]]:
    steps_file = work / f"{perturb}-{eps:g}.jsonl"
    env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), MINDSPEED_AI_FRAMEWORK="pytorch",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))  # torchrun's default: 1 thread
    command = [python, __file__, "--child", "--perturb", perturb, "--eps", repr(eps), "--seed", str(seed),
               "--steps-file", str(steps_file), "--", str(example), *argv]
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if completed.returncode != 0 or not steps_file.exists():
        sys.stderr.write(completed.stdout[-4000:] + completed.stderr[-4000:])
        raise SystemExit(f"the {perturb} eps={eps:g} run failed (exit {completed.returncode})")
    return [json.loads(line) for line in steps_file.read_text().splitlines()]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def _parity_steps(parity_dir: Path) -> dict[int, tuple[dict[str, float], dict[str, float]]]:
    """Per step (reference, candidate) records of a ``mindspeed-ms parity`` work dir's rank 0."""
    sides = []
    for side in ("reference", "candidate"):
        path = parity_dir / side / "rank0" / "steps.jsonl"
        sides.append({row["step"]: row for row in map(json.loads, path.read_text().splitlines())})
    return {step: (sides[0][step], sides[1][step]) for step in sides[0] if step in sides[1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-python", default=sys.executable, help="interpreter with real PyTorch")
    parser.add_argument("--perturb", choices=PERTURBATIONS, default="weights")
    parser.add_argument("--eps", type=float, default=1e-6, help="relative size of the perturbation")
    parser.add_argument("--seed", type=int, default=0, help="seed of the perturbation's noise")
    parser.add_argument("--loss-tolerance", type=float, default=1e-4)
    parser.add_argument("--grad-norm-tolerance", type=float, default=1e-3)
    parser.add_argument("--parity-dir", type=Path, default=None, help="a mindspeed-ms parity --work-dir to compare")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--steps-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("example", type=Path)
    parser.add_argument("example_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    example_args = list(args.example_args[1:] if args.example_args[:1] == ["--"] else args.example_args)
    if args.child:
        _child(args.example.resolve(), args.perturb, args.eps, args.seed, args.steps_file, example_args)
        return 0
    if not args.example.is_file():
        parser.error(f"no example script at {args.example}")
    with tempfile.TemporaryDirectory(prefix="parity-sensitivity-") as tmp:
        work = Path(tmp)
        base = _run(args.reference_python, args.example.resolve(), args.perturb, 0.0, args.seed, example_args, work)
        perturbed = _run(args.reference_python, args.example.resolve(), args.perturb, args.eps, args.seed,
                         example_args, work)
    parity = _parity_steps(args.parity_dir) if args.parity_dir else {}
    rows = []
    for b, p in zip(base, perturbed):
        row: dict[str, Any] = {"step": b["step"], "loss": b["loss"], "grad_norm": b["grad_norm"],
                               "loss_rel": _rel(b["loss"], p["loss"]),
                               "grad_norm_rel": _rel(b["grad_norm"], p["grad_norm"])}
        if int(b["step"]) in parity:
            ref, cand = parity[int(b["step"])]
            row["parity_loss_rel"] = _rel(ref["loss"], cand["loss"])
            row["parity_grad_norm_rel"] = _rel(ref["grad_norm"], cand["grad_norm"])
        rows.append(row)
    exceeded = [r["step"] for r in rows
                if r["loss_rel"] > args.loss_tolerance or r["grad_norm_rel"] > args.grad_norm_tolerance]
    if args.json:
        sys.stdout.write(json.dumps({"perturb": args.perturb, "eps": args.eps, "steps": rows,
                                     "exceeded_at": exceeded}, indent=1) + "\n")
    else:
        header = f"{'step':>4} {'loss':>10} {'grad norm':>10} {'loss rel':>9} {'gn rel':>9}"
        if parity:
            header += f" {'MS loss rel':>11} {'MS gn rel':>9}"
        lines = [f"PyTorch vs PyTorch with {args.perturb} perturbed by {args.eps:g} (relative)", header]
        for r in rows:
            line = (f"{r['step']:>4} {r['loss']:>10.6f} {r['grad_norm']:>10.4f} {r['loss_rel']:>9.1e} "
                    f"{r['grad_norm_rel']:>9.1e}")
            if "parity_loss_rel" in r:
                line += f" {r['parity_loss_rel']:>11.1e} {r['parity_grad_norm_rel']:>9.1e}"
            lines.append(line)
        verdict = (f"the perturbed reference exceeds the tolerances (loss {args.loss_tolerance:g}, grad norm "
                   f"{args.grad_norm_tolerance:g}) from step {exceeded[0]}" if exceeded else
                   "the perturbed reference stays within the tolerances at every step")
        sys.stdout.write("\n".join([*lines, verdict]) + "\n")
    return 1 if exceeded else 0


if __name__ == "__main__":
    sys.exit(main())
