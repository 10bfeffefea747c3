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
