"""Compare a reference dump with a candidate dump (see :mod:`mindspeed_ms.parity.capture`).

Relative differences are norm-wise: ``||candidate - reference|| / ||reference||`` over a whole
tensor (a module's output, a parameter's gradient), which does not blow up on elements near zero
the way an element-wise ratio does; for scalars (loss, grad norm) it is ``|c - r| / |r|``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mindspeed_ms.parity.context_parallel import cp_slice

__all__ = ["Tolerances", "StepComparison", "TensorComparison", "RankComparison", "ParityReport",
           "compare_dumps", "relative_difference"]


@dataclass(frozen=True)
class Tolerances:
    """Largest relative differences that count as the same computation.

    Attributes:
        loss: per-step loss (1e-4: fp32 training drifts by rounding, ~1e-6 per step here).
        grad_norm: per-step gradient norm (1e-3: the norm amplifies the optimizer's rounding).
        gradient: each parameter's first-step gradient (1e-5: same weights and batch, fp32).
        forward: each module's first-step output (1e-5).
    """

    loss: float = 1e-4
    grad_norm: float = 1e-3
    gradient: float = 1e-5
    forward: float = 1e-5


def relative_difference(candidate: Any, reference: Any) -> float:
    """Return ``||candidate - reference|| / ||reference||`` (0 when both are zero, inf on shape mismatch).

    Elements that are the same non-finite value on both sides (inf and inf of one sign, nan and nan: the gradient
    norm of an overflowed --fp16 step, which megatron skips) are equal; a non-finite element on one side only
    makes the difference inf.
    """
    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    both = ~np.isfinite(b) & ((a == b) | (np.isnan(a) & np.isnan(b)))
    if np.any(both):
        a, b = np.where(both, 0.0, a), np.where(both, 0.0, b)
    diff = float(np.linalg.norm((a - b).ravel()))
    scale = float(np.linalg.norm(b.ravel()))
    if diff == 0.0:
        return 0.0
    if not np.isfinite(diff):
        return float("inf")
    return diff / scale if scale > 0 else float("inf")


@dataclass(frozen=True)
class StepComparison:
    """One step of both runs."""

    step: int
    reference_loss: float | None
    candidate_loss: float | None
    loss_rel: float
    reference_grad_norm: float | None
    candidate_grad_norm: float | None
    grad_norm_rel: float
    ok: bool


@dataclass(frozen=True)
class TensorComparison:
    """One named tensor (a parameter's gradient or a module's output) of both runs."""

    name: str
    rel: float
    ok: bool


@dataclass(frozen=True)
class RankComparison:
    """Everything compared for one rank."""

    rank: int
    steps: tuple[StepComparison, ...]
    gradients: tuple[TensorComparison, ...]
    forward: tuple[TensorComparison, ...]
    first_divergent_module: str | None
    problems: tuple[str, ...]
    #: what was noted without counting against the verdict (modules of only one side, when they may differ)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every step, gradient and output is within tolerance and nothing is missing."""
        return (not self.problems and all(s.ok for s in self.steps) and all(g.ok for g in self.gradients)
                and all(f.ok for f in self.forward))


@dataclass(frozen=True)
class ParityReport:
    """The comparison of a reference run with a candidate run, per rank."""

    tolerances: Tolerances
    ranks: tuple[RankComparison, ...]
    commands: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every rank is within tolerance."""
        return bool(self.ranks) and all(rank.ok for rank in self.ranks)

    @property
    def first_divergent_module(self) -> str | None:
        """The first module (in completion order) whose first-step output diverges, on the first such rank."""
        return next((r.first_divergent_module for r in self.ranks if r.first_divergent_module), None)

    def max_loss_rel(self) -> float:
        """Return the largest per-step relative loss difference over all ranks."""
        return max((s.loss_rel for r in self.ranks for s in r.steps), default=0.0)

    def max_gradient_rel(self) -> float:
        """Return the largest first-step relative gradient difference over all ranks and parameters."""
        return max((g.rel for r in self.ranks for g in r.gradients), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data (infinities as strings)."""
        def clean(value: Any) -> Any:
            if isinstance(value, float) and not np.isfinite(value):
                return str(value)
            if isinstance(value, dict):
                return {key: clean(item) for key, item in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(item) for item in value]
            return value

        return clean({
            "ok": self.ok, "first_divergent_module": self.first_divergent_module,
            "max_loss_rel": self.max_loss_rel(), "max_gradient_rel": self.max_gradient_rel(),
            "tolerances": asdict(self.tolerances), "commands": self.commands,
            "ranks": [dict(asdict(rank), ok=rank.ok) for rank in self.ranks],
        })


def _read_steps(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _load(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


def _scalar_rel(candidate: float | None, reference: float | None) -> float:
    if candidate is None or reference is None:
        return 0.0 if candidate is None and reference is None else float("inf")
    return relative_difference(candidate, reference)


def _compare_rank(rank: int, reference: Path, candidate: Path, tolerances: Tolerances,
                  modules_may_differ: bool = False, cp: int = 1) -> RankComparison:
    problems: list[str] = []
    notes: list[str] = []
    ref_steps, cand_steps = _read_steps(reference / "steps.jsonl"), _read_steps(candidate / "steps.jsonl")
    if not ref_steps:
        problems.append("the reference recorded no step (did the script call backward() on a scalar loss?)")
    if len(cand_steps) != len(ref_steps):
        problems.append(f"the reference recorded {len(ref_steps)} steps, the candidate {len(cand_steps)}")
    steps = []
    for ref, cand in zip(ref_steps, cand_steps):
        loss_rel = _scalar_rel(cand["loss"], ref["loss"])
        norm_rel = _scalar_rel(cand["grad_norm"], ref["grad_norm"])
        steps.append(StepComparison(ref["step"], ref["loss"], cand["loss"], loss_rel, ref["grad_norm"],
                                    cand["grad_norm"], norm_rel,
                                    loss_rel <= tolerances.loss and norm_rel <= tolerances.grad_norm))
    ref_grads, cand_grads = _load(reference / "grads.npz"), _load(candidate / "grads.npz")
    problems += [f"gradient of {name} only in the reference" for name in sorted(set(ref_grads) - set(cand_grads))]
    problems += [f"gradient of {name} only in the candidate" for name in sorted(set(cand_grads) - set(ref_grads))]
    gradients = tuple(sorted(
        (TensorComparison(name, rel, rel <= tolerances.gradient)
         for name in sorted(set(ref_grads) & set(cand_grads))
         for rel in (relative_difference(cand_grads[name], ref_grads[name]),)),
        key=lambda item: -item.rel))
    ref_out, cand_out = _load(reference / "forward.npz"), _load(candidate / "forward.npz")
    order_file = reference / "forward_order.json"
    order = json.loads(order_file.read_text()) if order_file.exists() else sorted(ref_out)
    forward = []
    for name in order:
        if name not in cand_out:
            (notes if modules_may_differ else problems).append(f"output of module {name} only in the reference")
            continue
        theirs = ref_out[name]
        if cand_out[name].shape != theirs.shape and cp > 1:  # a context-parallel rank's slice of the sequence
            sliced = cp_slice(theirs, cand_out[name].shape, cp, rank % cp)
            theirs = theirs if sliced is None else sliced
        rel = relative_difference(cand_out[name], theirs)
        forward.append(TensorComparison(name, rel, rel <= tolerances.forward))
    first = next((item.name for item in forward if not item.ok), None)
    if modules_may_differ:
        notes += [f"output of module {name} only in the candidate" for name in sorted(set(cand_out) - set(ref_out))]
    return RankComparison(rank, tuple(steps), gradients, tuple(forward), first, tuple(problems), tuple(notes))


def compare_dumps(reference: str | Path, candidate: str | Path, tolerances: Tolerances | None = None,
                  commands: dict[str, list[str]] | None = None, modules_may_differ: bool = False,
                  context_parallel: int = 1) -> ParityReport:
    """Compare every rank's dump of ``reference`` with ``candidate``'s.

    Args:
        reference: the reference run's ``MINDSPEED_MS_PARITY_DIR``.
        candidate: the candidate run's.
        tolerances: what counts as equal; the defaults of :class:`Tolerances` when None.
        commands: the two command lines, kept in the report.
        modules_may_differ: the two runs are different scripts building the same model (a fused attention has no
            softmax submodule): a module output recorded on one side only is a note, not a problem; the outputs
            both record are compared as ever.
        context_parallel: the candidate's context-parallel size: its rank ``k`` is compared with the reference's
            rank ``k // context_parallel``, module outputs with the reference's sequence slice
            (:mod:`mindspeed_ms.parity.context_parallel`).

    Returns:
        The report; ``report.ok`` tells the verdict.
    """
    tolerances = tolerances or Tolerances()
    reference, candidate = Path(reference), Path(candidate)
    ranks = sorted(int(path.name[4:]) for path in reference.glob("rank*") if path.name[4:].isdigit())
    compared = []
    for rank in (mine for theirs in ranks for mine in range(theirs * context_parallel,
                                                              (theirs + 1) * context_parallel)):
        comparison = _compare_rank(rank, reference / f"rank{rank // context_parallel}", candidate / f"rank{rank}",
                                   tolerances, modules_may_differ, context_parallel)
        if not (candidate / f"rank{rank}").exists():
            comparison = RankComparison(rank, (), (), (), None, (f"rank {rank}: the candidate wrote nothing",))
        compared.append(comparison)
    if not ranks:
        compared.append(RankComparison(0, (), (), (), None, ("the reference wrote no dump",)))
    return ParityReport(tolerances, tuple(compared), dict(commands or {}))
