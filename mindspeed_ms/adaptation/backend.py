"""The MindSpore backend's entry (``import torch`` gives MSAdapter) and the CUDA check of PyTorch mode.

Only ``os`` and ``sys`` are imported up front: PyTorch mode asks :func:`has_cuda_device` on the
adaptor's import path.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["CUDA_DEVICE_FILES", "prepare_backend", "has_cuda_device"]

#: Files an NVIDIA driver provides; without them PyTorch has no CUDA device (checked without importing torch).
CUDA_DEVICE_FILES = ("/dev/nvidiactl", "/proc/driver/nvidia/version")


def has_cuda_device(files: Sequence[str] = CUDA_DEVICE_FILES) -> bool:
    """Tell whether an NVIDIA driver is present, without importing torch (a file check)."""
    return any(os.path.exists(path) for path in files)


def prepare_backend() -> None:
    """Make ``import torch`` resolve to MSAdapter by importing ``msadapter`` first.

    Raises:
        BackendNotInstalledError: MSAdapter is not installed (the message says how to install it); a
            ``ModuleNotFoundError``.
        BackendImportError: a torch that is not MSAdapter's was imported already
            (``mindspeed_ms.adaptor`` must come first); an ``ImportError``.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        loader = getattr(getattr(torch, "__spec__", None), "loader", None)
        if not type(loader).__module__.startswith("msadapter"):
            where = getattr(torch, "__file__", None) or repr(torch)
            from mindspeed_ms.adaptation.errors import BackendImportError

            raise BackendImportError(
                f"torch ({where}) was imported before mindspeed_ms.adaptor: in MindSpore mode "
                f"'import mindspeed_ms.adaptor' must be the first import of the training script, so that "
                f"'import torch' resolves to MSAdapter", name="torch")
    try:
        import msadapter  # noqa: F401 - imported for its effect: `import torch` now gives MSAdapter
    except ModuleNotFoundError as exc:
        if exc.name != "msadapter":
            raise
        from mindspeed_ms.adaptation.errors import BackendNotInstalledError
        from mindspeed_ms.versions import MSADAPTER_INSTALL  # the version table; read only on this error path

        raise BackendNotInstalledError(
            f"MindSpore mode (--ai-framework mindspore) needs MSAdapter, which provides 'torch' on top of "
            f"MindSpore, and it is not installed: {MSADAPTER_INSTALL} (or: pip install 'mindspeed_ms[mindspore]')",
            name="msadapter") from exc
