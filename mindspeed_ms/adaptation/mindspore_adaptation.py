"""``MindSporeAdaptation``: MindSpeed-LLM's API, as classmethods over the process's default Adaptation.

Modeled on MindSpeed-LLM's ``MegatronAdaptation``/``MindSporeAdaptation``; each classmethod is one
call on :func:`~.core.default_adaptation` (see :class:`~.core.Adaptation`). Only the framework
switch (:meth:`MindSporeAdaptation.execute`) is gated by the framework; ``register``/``apply``/
``revert`` work in either mode.
"""

from __future__ import annotations

from mindspeed_ms.adaptation.core import default_adaptation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from mindspeed_ms.adaptation.providers import ProviderRun
    from mindspeed_ms.adaptation.runtime import RuntimeSetting
    from mindspeed_ms.engine.patch_record import PatchRecord
    from mindspeed_ms.engine.registry import PatchRegistry
    from mindspeed_ms.engine.status import ApplyReport, PatchStatus

__all__ = ["MindSporeAdaptation", "default_registry", "pytorch_registry", "execute_mindspore"]


def default_registry() -> PatchRegistry:
    """Return the default adaptation's registry (see :meth:`~.core.Adaptation.registry`).

    Raises:
        SettingError: ``MINDSPEED_MS_MISSING_TARGETS`` is neither ``error`` nor ``skip``, or
            ``MINDSPEED_MS_TRACE`` is not a yes/no value (a ``ValueError``).
    """
    return default_adaptation().registry()


def pytorch_registry() -> PatchRegistry:
    """Return the default adaptation's PyTorch-mode registry (``pytorch_cpu``, a parity capture)."""
    return default_adaptation().pytorch_registry()


def execute_mindspore() -> ApplyReport:
    """Run :meth:`MindSporeAdaptation.execute`'s MindSpore path whatever the framework switch says.

    The providers run once per process (they see ``ai_framework="mindspore"``); later calls only
    apply again what a :meth:`~MindSporeAdaptation.revert` undid. Used by the ``mindspore_adaptation``
    pytest fixture.

    Returns:
        The report of the apply.
    """
    return default_adaptation().execute_mindspore()


class MindSporeAdaptation:
    """The default adaptation: a process-wide :class:`~mindspeed_ms.PatchRegistry` behind MindSpeed-LLM's API.

    Every method is a classmethod over :func:`~.core.default_adaptation`. ``register``/``apply``/
    ``revert`` work in either framework mode; only :meth:`execute` is gated by the framework.
    """

    @classmethod
    def register(cls, orig_func_name: str, new_func: Any = None, force_patch: bool = True,
                 create_dummy: bool = False, check_patch: bool = False, **options: Any) -> PatchRecord:
        """Register a patch in the default registry (MindSpeed-LLM's arguments and defaults).

        Inside a provider's ``register(registry, args)`` it registers into that provider's registry
        instead, attributed to the provider (what ``mindspeed-ms patches``/``verify`` list).

        Args:
            orig_func_name: dotted target, e.g. ``"megatron.core.tensor_parallel.random._set_cuda_rng_state"``.
            new_func: replacement, decorator ``wrapper(fn) -> fn`` or ``None`` (placeholder).
            force_patch: replace an earlier replacement of the same target. True here, as MindSpeed-LLM's
                ``MindSporeAdaptation.register_patch`` has it (its MindSpore recipe registers the same
                target again on purpose); ``PatchRegistry.register`` and the MindSpeed manager's
                ``register_patch`` default to False, as MindSpeed's ``MindSpeedPatchesManager`` does.
            create_dummy: create the missing modules/attribute as stubs instead of failing.
            check_patch: log each call into the patch (MindSpeed-LLM printed it).
            **options: ``kind`` (``"auto"``/``"replace"``/``"wrap"``), ``requires`` (PEP 508), ``purpose``,
                ``stacklevel`` (for a function registering on behalf of its caller, as in
                :meth:`PatchRegistry.register`).

        Returns:
            The target's :class:`~mindspeed_ms.PatchRecord`.

        Raises:
            PatchValidationError: malformed target, kind, replacement or requirement.
            PatchConflictError: another replacement is registered and ``force_patch`` is False.
        """
        # Called by a provider (the porting recipe), it fills the registry that provider was handed.
        registry = default_adaptation().registry_to_fill()
        # the registration site: the line calling this method (a stacklevel given counts from there)
        options["stacklevel"] = options.get("stacklevel", 1) + 1
        return registry.register(orig_func_name, new_func, force_patch=force_patch, create_dummy=create_dummy,
                                 log_calls=check_patch, **options)

    @classmethod
    def apply(cls) -> ApplyReport:
        """Apply every registered patch not applied yet (see :meth:`PatchRegistry.apply`)."""
        return default_adaptation().registry().apply()

    @classmethod
    def revert(cls) -> None:
        """Undo every applied patch exactly (see :meth:`PatchRegistry.revert`)."""
        default_adaptation().registry().revert()

    @classmethod
    def status(cls) -> list[PatchStatus]:
        """Return the status of every patch of the default registry (with call counts when tracing)."""
        return default_adaptation().registry().status()

    @classmethod
    def registry(cls) -> PatchRegistry:
        """Return the default registry."""
        return default_adaptation().registry()

    @classmethod
    def providers(cls) -> ProviderRun | None:
        """Return which providers registered and which were skipped, or None before :meth:`execute`."""
        return default_adaptation().provider_run

    @classmethod
    def runtime_settings(cls) -> tuple[RuntimeSetting, ...] | None:
        """Return the MindSpore runtime settings applied (see :mod:`.runtime`), or None before."""
        return default_adaptation().runtime_settings

    @classmethod
    def get_args(cls) -> Any:
        """Return the namespace given to :meth:`repatch`, else ``sys.argv``'s flags.

        The namespace has one attribute per ``--flag value`` (see :func:`.framework.get_args`).
        Providers get a view over it that also holds ``ai_framework`` (see :class:`.framework.ProviderArgs`).
        """
        return default_adaptation().get_args()

    @classmethod
    def execute(cls) -> ApplyReport | None:
        """Switch this process to MindSpore if the framework says so; once per process.

        In PyTorch mode (the default) this does nothing and imports nothing. In MindSpore mode
        (``--ai-framework mindspore`` in ``sys.argv`` or ``MINDSPEED_AI_FRAMEWORK=mindspore``) it makes
        ``import torch`` resolve to MSAdapter, collects the providers and applies their patches, then
        logs one summary line (rank 0). Later calls return the first report and change nothing.

        Returns:
            The :class:`~mindspeed_ms.ApplyReport`, or None in PyTorch mode.

        Raises:
            FrameworkError: the framework named is unknown.
            SettingError: an environment variable of mindspeed_ms is malformed.
            ImportError: MSAdapter is missing, or torch was imported before the adaptor.
            ProviderError: a provider failed; its registrations were withdrawn.
            PatchApplyError: a patch failed; the batch was rolled back.
        """
        return default_adaptation().execute()

    @classmethod
    def repatch(cls, args: Any) -> ApplyReport | None:
        """Revert, then collect the providers again with ``args`` and apply (configuration outside argv).

        ``args`` is any namespace (e.g. Megatron's parsed arguments); it is read, never written. Its
        ``ai_framework`` attribute, when set, chooses the framework, else ``--ai-framework``/
        ``MINDSPEED_AI_FRAMEWORK`` do. Registrations made outside providers (also on a provider's
        targets) stay registered and are applied again in MindSpore mode.

        Returns:
            The new report, or None when the framework is PyTorch (everything stays reverted).

        Raises:
            FrameworkError: ``args.ai_framework`` names an unknown framework.
            ImportError, ProviderError, PatchApplyError: as for :meth:`execute`.
        """
        return default_adaptation().repatch(args)
