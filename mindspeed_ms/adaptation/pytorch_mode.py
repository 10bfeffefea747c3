"""PyTorch mode: what an :class:`~.core.Adaptation` does when the training runs on PyTorch.

The code stays on PyTorch. Executing only
- registers the ``pytorch_cpu`` provider's patches (megatron-core on a machine without CUDA) once
  ``megatron`` has been imported (the watcher's
  :meth:`~mindspeed_ms.engine.watcher.ImportWatcher.when_imported`), so the adaptor's import stays free;
- adopts ``mindspeed.patch_utils`` when ``MINDSPEED_MS_ADOPT_MINDSPEED`` asks for it, handing
  MindSpeed's manager this mode's registry;
- installs a parity capture when ``MINDSPEED_MS_PARITY_DIR`` is set.

All of it goes into the adaptation's PyTorch-mode registry (:meth:`~.core.Adaptation.pytorch_registry`):
registrations meant for MindSpore mode are never applied here. :func:`leave_out_mindspore_providers`
is the same rule for a provider run in PyTorch mode (listing, verification).

This module is imported on the adaptor's PyTorch-mode path: it imports nothing at load time.
"""

from __future__ import annotations

from mindspeed_ms.adaptation.framework import ProviderArgs
from mindspeed_ms.adaptation.settings import ADOPTION_PROVIDER, PYTORCH_CPU_PROVIDER, adoption_wanted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from mindspeed_ms.adaptation.providers import Discovery
    from mindspeed_ms.adaptation.settings import Settings
    from mindspeed_ms.engine.registry import PatchRegistry
    from mindspeed_ms.engine.watcher import ImportWatcher

    class Host(Protocol):
        """What PyTorch mode uses of its adaptation (:class:`~.core.Adaptation`, which holds a PyTorchMode)."""

        @property
        def settings(self) -> Settings: ...

        @property
        def watcher(self) -> ImportWatcher: ...

        def has_cuda_device(self) -> bool: ...

        def get_args(self) -> Any: ...

        def pytorch_registry(self) -> PatchRegistry: ...

        def hand_over_to_manager(self, registry: Callable[[], PatchRegistry]) -> None: ...

__all__ = ["PyTorchMode", "leave_out_mindspore_providers"]


class PyTorchMode:
    """One adaptation's PyTorch-mode work: done once, its deferred part cancelled by :meth:`close`.

    Args:
        adaptation: the adaptation whose settings, watcher and PyTorch-mode registry it uses.
    """

    def __init__(self, adaptation: Host) -> None:
        self._adaptation = adaptation
        self._executed = False
        self._cancel_deferred: Callable[[], None] | None = None

    @property
    def is_executed(self) -> bool:
        """Tell whether :meth:`execute` ran."""
        return self._executed

    def execute(self) -> None:
        """Arm ``pytorch_cpu`` on a machine without CUDA, adopt MindSpeed's manager and capture if asked; once."""
        if self._executed:
            return
        adaptation = self._adaptation
        settings = adaptation.settings
        cpu = not adaptation.has_cuda_device() and PYTORCH_CPU_PROVIDER not in settings.disabled
        adopt = adoption_wanted("pytorch", settings)
        self._executed = True
        if adopt or settings.parity_dir:
            from mindspeed_ms.adaptation.log import configure_logging

            configure_logging(settings)
        if cpu:
            args = adaptation.get_args()
            self._cancel_deferred = adaptation.watcher.when_imported("megatron",
                                                                     lambda module: self._arm_pytorch_cpu(args))
        if adopt:
            from mindspeed_ms.patch_manager.adoption import register_adoption

            adaptation.hand_over_to_manager(adaptation.pytorch_registry)  # the registry applied in this mode
            registry = adaptation.pytorch_registry()
            with registry.provider(ADOPTION_PROVIDER):
                register_adoption(registry)
            registry.apply()
        if settings.parity_dir:
            from mindspeed_ms.parity.install import install_from_environment

            install_from_environment(adaptation.pytorch_registry())

    def close(self) -> None:
        """Cancel the deferred ``pytorch_cpu`` registration if ``megatron`` was not imported yet."""
        if self._cancel_deferred is not None:
            self._cancel_deferred()
            self._cancel_deferred = None

    def _arm_pytorch_cpu(self, args: Any) -> None:
        import logging

        from mindspeed_ms.adaptation.log import configure_logging
        from mindspeed_ms.adaptation.providers import as_provider, register_providers
        from mindspeed_ms.adaptation.tracing import current_rank
        from mindspeed_ms.patches import pytorch_cpu

        self._cancel_deferred = None
        adaptation = self._adaptation
        configure_logging(adaptation.settings)
        registry = adaptation.pytorch_registry()
        provider = as_provider(pytorch_cpu, PYTORCH_CPU_PROVIDER, pytorch_cpu.__name__)
        register_providers(registry, [provider], ProviderArgs(args, ai_framework="pytorch"))
        report = registry.apply()
        logging.getLogger("mindspeed_ms.adaptation").log(
            logging.INFO if current_rank() == 0 else logging.DEBUG, "PyTorch backend without CUDA, %s",
            report.summary())


def leave_out_mindspore_providers(discovery: Discovery) -> Discovery:
    """Leave out the built-in providers of MindSpore mode, saying why; PyTorch mode's and downstream ones stay.

    Downstream providers are handed ``args.ai_framework`` and decide for themselves.
    """
    from dataclasses import replace

    from mindspeed_ms.adaptation.providers import SkippedProvider

    kept = tuple(p for p in discovery.providers
                 if not p.builtin or p.name in (PYTORCH_CPU_PROVIDER, ADOPTION_PROVIDER))
    left = tuple(SkippedProvider(p.name, p.origin, "MindSpore mode only") for p in discovery.providers
                 if p not in kept)
    return replace(discovery, providers=kept, disabled=discovery.disabled + left)
