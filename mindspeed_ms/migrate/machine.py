"""The machine ``mindspeed-ms doctor`` looks at: injected (tests stage machines), or this process's own.

The environment, ``PATH``, the module search path and the Python version come from :class:`Machine`;
installed versions are read from distribution metadata (never by importing the package), commands run
with their output decoded leniently (:func:`run_text`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

__all__ = ["Machine", "distribution_version", "run_text"]


class Machine:
    """What the checks may look at: injected, or this process's own."""

    def __init__(self, environ: Mapping[str, str] | None, path: str | None, search_path: Sequence[str] | None,
                 python: str | None, python_version: tuple[int, ...] | None, argv: Sequence[str],
                 timeout: float) -> None:
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.path = self.environ.get("PATH", os.defpath) if path is None else path
        self.search_path = None if search_path is None else list(search_path)
        self.python = sys.executable if python is None else python
        self.python_version = tuple(sys.version_info[:3]) if python_version is None else tuple(python_version)
        self.argv = list(argv)
        self.timeout = timeout

    def version(self, name: str) -> str | None:
        """Return the installed version of distribution ``name`` on the search path, or None."""
        found = metadata.distributions(name=name, path=self.search_path if self.search_path is not None else sys.path)
        for distribution in found:
            return distribution_version(distribution)
        return None

    def child_environ(self) -> dict[str, str]:
        child = dict(self.environ)
        child["PATH"] = self.path
        child.setdefault("GLOG_v", "3")  # MindSpore's C++ logging would bury the probe's answer
        return child


def distribution_version(distribution: metadata.Distribution) -> str | None:
    """Return a distribution's version, reading a METADATA file that is not UTF-8 with replacement."""
    try:
        return str(distribution.version)
    except UnicodeDecodeError:  # importlib.metadata reads METADATA as strict UTF-8
        pass
    # PathDistribution keeps its .dist-info folder in ``_path`` (no public accessor); others have no bytes to reread
    folder = getattr(distribution, "_path", None)
    for name in ("METADATA", "PKG-INFO"):
        try:
            text = Path(folder, name).read_bytes().decode("utf-8", "replace") if folder is not None else ""
        except OSError:
            continue
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "version":
                return value.strip()
            if not line:  # the headers end at the first empty line
                break
    return None


def run_text(command: Sequence[str], *, timeout: float, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``command``; its output is decoded as UTF-8 with replacement (tools may print GBK or raw bytes)."""
    return subprocess.run(list(command), capture_output=True, text=True, encoding="utf-8", errors="replace",
                          timeout=timeout, env=dict(env), check=False)
