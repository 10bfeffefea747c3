"""Small helpers shared by test modules (importable because pytest puts tests/ on sys.path)."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path


def unique(prefix: str) -> str:
    """Return ``prefix`` with a random suffix: a module name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: source}`` under ``root`` (sources are dedented)."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def reference_python() -> str:
    """Return the PyTorch reference interpreter (``$MINDSPEED_MS_REFERENCE_PYTHON``, else ``.venv-ref``).

    Fails the calling test (it is not skipped: CI builds it) when there is none.
    """
    import os

    import pytest

    root = Path(__file__).resolve().parents[1]
    path = os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON") or str(root / ".venv-ref" / "bin" / "python")
    if not os.path.exists(path):
        pytest.fail(f"no PyTorch reference interpreter at {path}: build it with scripts/make_reference_venv.sh "
                    f"(as .ci/run does) or set MINDSPEED_MS_REFERENCE_PYTHON")
    return path


def is_running(pid: int) -> bool:
    """Tell whether process ``pid`` runs (a zombie, ended but not reaped where nothing reaps orphans, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
