"""Call tracing reports: which patched functions a run went through, written as JSON per rank.

With ``MINDSPEED_MS_TRACE=1`` the default registry wraps each installed replacement in a counting
shim; at exit :func:`write_trace_report` writes the counts to ``MINDSPEED_MS_TRACE_FILE``. Only
``os`` is imported up front: this module is loaded in PyTorch mode too.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from mindspeed_ms.registry import PatchRegistry

__all__ = ["current_rank", "trace_path", "write_trace_report"]


def current_rank(environ: Mapping[str, str] | None = None) -> int:
    """Return this process's rank: msrun's ``RANK_ID`` first (MSAdapter rewrites ``RANK`` from it), else ``RANK``."""
    env = os.environ if environ is None else environ
    for name in ("RANK_ID", "RANK"):
        value = (env.get(name) or "").strip()
        if value.isascii() and value.isdigit():  # isdigit() alone accepts '²', which int() rejects
            return int(value)
    return 0


def trace_path(template: str, rank: int) -> str:
    if "{rank}" in template or "{pid}" in template:
        return template.replace("{rank}", str(rank)).replace("{pid}", str(os.getpid()))
    if rank == 0:
        return template
    stem, dot, suffix = template.rpartition(".")
    return f"{stem}.rank{rank}.{suffix}" if dot and "/" not in suffix else f"{template}.rank{rank}"


def write_trace_report(path: str, registry: PatchRegistry) -> str:
    """Write the call-tracing report (which patched functions were called, how often) as JSON.

    Args:
        path: the file; ``{rank}`` and ``{pid}`` are substituted, and ranks other than 0 get
            ``.rankN`` before the suffix when neither is present.
        registry: the registry to report on.

    Returns:
        The path written.
    """
    import json

    statuses = registry.status()
    called = sorted((s for s in statuses if s.calls), key=lambda s: (-(s.calls or 0), s.target))
    data = {
        "registry": registry.name, "rank": current_rank(), "pid": os.getpid(), "traced": registry.trace,
        "called": [{"target": s.target, "calls": s.calls, "replacement": s.replacement, "provider": s.provider}
                   for s in called],
        "not_called": [s.target for s in statuses if s.state == "applied" and not s.calls],
        "patches": [s.to_dict() for s in statuses],
    }
    target = trace_path(path, current_rank())
    temporary = f"{target}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.replace(temporary, target)
    return target
