"""The Adaptation object: one process's (or one test's) whole switch to MindSpore, in one instance.

An :class:`Adaptation` holds the settings (the environment, read once), the framework (decided
once), the default and PyTorch-mode registries, the import watcher they use, the providers' run and
the runtime settings applied. :class:`MindSporeAdaptation` (MindSpeed-LLM's API) is classmethods over
the process's default Adaptation (:func:`default_adaptation`), which ``import mindspeed_ms.adaptor``
executes; a test builds its own and, where it exercises the classmethods, makes it the default for
the test (:func:`replace_default_adaptation`).

Importing this module has no side effect. It is imported in PyTorch mode too, where it must cost next
to nothing: the registry, ``logging``, the providers and ``importlib.metadata`` are imported inside
the methods that need them, on the MindSpore path (or once ``megatron`` is imported) only. What
executing does in PyTorch mode is :mod:`.pytorch_mode`'s.
"""

from __future__ import annotations

import _thread

from mindspeed_ms.adaptation.framework import ProviderArgs, decide_framework, get_args
from mindspeed_ms.adaptation.pytorch_mode import PyTorchMode
from mindspeed_ms.adaptation.settings import (
    ADOPT_ENV,
    ADOPTION_PROVIDER,
    DISABLE_ENV,
    FRAMEWORKS,
    PYTORCH_CPU_PROVIDER,
    Settings,
    adoption_wanted,
)

# ``typing`` costs ~2 ms to import and a bare interpreter has not loaded it; annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from mindspeed_ms.adaptation.framework import FrameworkChoice
    from mindspeed_ms.adaptation.providers import ProviderRun
    from mindspeed_ms.adaptation.runtime import RuntimeSetting
    from mindspeed_ms.engine.registry import PatchRegistry
    from mindspeed_ms.engine.status import ApplyReport
    from mindspeed_ms.engine.watcher import ImportWatcher

# adoption_wanted and ADOPTION_PROVIDER live with the settings they read (.settings); exported here too
__all__ = ["Adaptation", "ADOPTION_PROVIDER", "adoption_wanted", "default_adaptation", "replace_default_adaptation"]


class Adaptation:
    """Everything one switch to MindSpore holds: settings, framework, registries, watcher, providers, runtime.

    Args:
        settings: the settings; read from ``os.environ`` the first time they are needed when None.
        argv: the command line the framework and the providers' flags are read from, without the
            program name; ``sys.argv[1:]`` (at decision time) when None.
        framework: the framework, chosen by the caller (a CLI option); decided from ``argv`` and the
            settings when None (see :func:`.framework.decide_framework`).
        watcher: the import watcher of the registries and of PyTorch mode's deferral; the engine's
            process-wide one when None.
        cuda_device_files: the files whose presence means an NVIDIA driver (PyTorch mode's CPU check).
    """

    def __init__(self, *, settings: Settings | None = None, argv: Sequence[str] | None = None,
                 framework: str | None = None, watcher: ImportWatcher | None = None,
                 cuda_device_files: Sequence[str] | None = None) -> None:
        self._lock = _thread.RLock()
        self._settings = settings
        self._argv = None if argv is None else tuple(argv)
        self._given = framework
        self._watcher = watcher
        self._cuda_device_files = cuda_device_files
        self._framework: FrameworkChoice | None = None
        self._registry: PatchRegistry | None = None
        self._pytorch_registry: PatchRegistry | None = None
        self._args: Any = None  # given to repatch()
        self._executed = False
        self._report: ApplyReport | None = None
        self._run: ProviderRun | None = None
        self._runtime: tuple[RuntimeSetting, ...] | None = None
        self._pytorch = PyTorchMode(self)
        self._trace_armed = False
        self._handed_over = False  # MindSpeed's manager facade fills this adaptation's registry

    # -- what it holds ------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """Return the settings, reading the environment the first time (they never change after).

        Raises:
            SettingError: a variable is malformed.
        """
        with self._lock:
            if self._settings is None:
                self._settings = Settings.from_environ()
            return self._settings

    @property
    def framework(self) -> FrameworkChoice:
        """Return the framework, decided the first time it is asked (see :func:`.framework.decide_framework`).

        The framework given to the constructor, else ``args.ai_framework`` of the namespace given to
        :meth:`repatch`, decides when set.

        Raises:
            FrameworkError: an unknown framework is named.
        """
        with self._lock:
            if self._framework is None:
                given = self._given
                if given is None and self._args is not None:
                    given = getattr(self._args, "ai_framework", None)
                self._framework = decide_framework(self._argv, self.settings, given=given)
            return self._framework

    @property
    def watcher(self) -> ImportWatcher:
        """Return the import watcher this adaptation's registries and deferrals subscribe to."""
        if self._watcher is None:
            from mindspeed_ms.engine.watcher import default_watcher

            return default_watcher()
        return self._watcher

    def registry(self) -> PatchRegistry:
        """Return the default registry (MindSpore mode's, and ``register()``'s), creating it on first use.

        Call tracing is on when ``MINDSPEED_MS_TRACE`` says so (the report is armed when
        ``MINDSPEED_MS_TRACE_FILE`` is set too); ``MINDSPEED_MS_MISSING_TARGETS=skip`` skips (and
        warns about) registered targets that do not exist instead of failing ``apply()``.

        Raises:
            SettingError: a variable is malformed (a ``ValueError``).
        """
        with self._lock:
            if self._registry is None:
                from mindspeed_ms.engine.registry import PatchRegistry

                settings = self.settings
                self._registry = PatchRegistry(name="mindspeed_ms", trace=settings.trace, watcher=self._watcher,
                                               missing_targets=settings.missing_targets)
                if settings.trace and settings.trace_file:
                    self._arm_trace_report()  # PyTorch mode too: register()/apply() are traced
            return self._registry

    def registry_to_fill(self) -> PatchRegistry:
        """Return where a registration made now goes: the registry being filled in this context, else :meth:`registry`.

        Inside a provider's ``register(registry, args)`` (a :meth:`PatchRegistry.provider` block) that is
        the provider's registry (the engine's :func:`~mindspeed_ms.engine.registry.registry_being_filled`);
        ``MindSporeAdaptation.register`` and MindSpeed's manager facade both ask this.
        """
        from mindspeed_ms.engine.registry import registry_being_filled

        filling = registry_being_filled()
        return filling if filling is not None else self.registry()  # not `or`: an empty registry is falsy

    def pytorch_registry(self) -> PatchRegistry:
        """Return the registry of PyTorch mode's own patches (``pytorch_cpu``, a parity capture), creating it once.

        It is not the default registry: registrations meant for MindSpore mode are never applied in PyTorch mode.
        """
        with self._lock:
            if self._pytorch_registry is None:
                from mindspeed_ms.engine.registry import PatchRegistry

                self._pytorch_registry = PatchRegistry(name="mindspeed_ms.pytorch", watcher=self._watcher)
            return self._pytorch_registry

    def registries(self) -> tuple[PatchRegistry, ...]:
        """Return the registries created so far: the default one, then PyTorch mode's (none before first use)."""
        return tuple(registry for registry in (self._registry, self._pytorch_registry) if registry is not None)

    @property
    def provider_run(self) -> ProviderRun | None:
        """Return which providers registered and which were skipped, or None before :meth:`execute`."""
        return self._run

    @property
    def runtime_settings(self) -> tuple[RuntimeSetting, ...] | None:
        """Return the MindSpore runtime settings applied (see :mod:`.runtime`), or None before."""
        return self._runtime

    @property
    def is_executed(self) -> bool:
        """Tell whether :meth:`execute` ran its MindSpore path (and no :meth:`repatch` undid it since)."""
        return self._executed

    def get_args(self) -> Any:
        """Return the caller's namespace: the one given to :meth:`repatch`, else the command line's flags."""
        return self._args if self._args is not None else get_args(self._argv)

    def has_cuda_device(self) -> bool:
        """Tell whether this machine has an NVIDIA driver (PyTorch mode's ``pytorch_cpu`` stays out then)."""
        from mindspeed_ms.adaptation.backend import CUDA_DEVICE_FILES, has_cuda_device

        return has_cuda_device(self._cuda_device_files or CUDA_DEVICE_FILES)

    # -- providers ------------------------------------------------------------------------------------
    def _disabled(self, framework: str) -> dict[str, str]:
        settings = self.settings
        disabled = {name: f"disabled by {DISABLE_ENV}" for name in settings.disabled}
        if not adoption_wanted(framework, settings):
            disabled.setdefault(ADOPTION_PROVIDER, f"not adopted in {framework} mode ({ADOPT_ENV} decides)")
        if framework == "pytorch" and self.has_cuda_device():
            disabled.setdefault(PYTORCH_CPU_PROVIDER, "PyTorch mode with a CUDA device")
        return disabled

    def run_providers(self, registry: PatchRegistry, args: Any = None, *, framework: str | None = None,
                      enforce_blocks: bool = False, argv: Sequence[str] | None = None) -> ProviderRun:
        """Discover every provider (built-in, then entry points, minus disabled ones) and let it register.

        The providers get a :class:`~.framework.ProviderArgs` over ``args``: ``args.ai_framework`` is
        the framework, the flags they declare are typed; ``args`` itself is never written.

        Args:
            registry: the registry to fill.
            args: the caller's namespace; the command line's flags when None.
            framework: the framework the providers see; this adaptation's when None.
            enforce_blocks: put the providers' declared module blocks in force before any of them runs
                (execution does; listing and verification do not).
            argv: the command line the declared flags are parsed from; this adaptation's when None.

        Returns:
            What registered and what was skipped (disabled providers included).

        Raises:
            ProviderError: a provider failed to load or to register; every registration of the run was
                withdrawn.
        """
        from mindspeed_ms.adaptation.framework import with_declared_flags
        from mindspeed_ms.adaptation.providers import ProviderRun, discover_providers, register_providers
        from mindspeed_ms.adaptation.pytorch_mode import leave_out_mindspore_providers

        name = framework if framework is not None else self.framework.name
        discovery = discover_providers(self._disabled(name))
        if name == "pytorch":  # the built-in providers that switch code to MindSpore stay out (as execute() does)
            discovery = leave_out_mindspore_providers(discovery)
        declarations = [p.register_args for p in discovery.providers if p.register_args is not None]
        argv = argv if argv is not None else self._argv
        view = ProviderArgs(args if args is not None else self.get_args(), ai_framework=name)
        view = with_declared_flags(view, declarations, argv)
        run = register_providers(registry, discovery.providers, view, enforce_blocks=enforce_blocks)
        return ProviderRun(run.registered, discovery.disabled + run.skipped)

    def collect_patches(self, framework: str | None = None, argv: Sequence[str] = ()
                        ) -> tuple[PatchRegistry, ProviderRun]:
        """Let every provider register into a fresh registry, as :meth:`execute` would, without applying.

        Nothing is imported but the providers themselves (this is what ``mindspeed-ms patches`` and
        ``verify`` list).

        Args:
            framework: the framework the providers see; this adaptation's when None.
            argv: training-script flags handed to the providers.

        Returns:
            The filled registry and what the providers did.

        Raises:
            ProviderError: a provider failed to load or to register.
        """
        from mindspeed_ms.engine.registry import PatchRegistry

        registry = PatchRegistry(name="mindspeed-ms")
        return registry, self.run_providers(registry, get_args(argv), framework=framework, argv=argv)

    # -- execution -----------------------------------------------------------------------------------
    def execute(self) -> ApplyReport | None:
        """Switch to MindSpore if the framework says so; once (see :meth:`MindSporeAdaptation.execute`)."""
        with self._lock:
            if self._executed:
                return self._report
            if self.framework.name != "mindspore":
                self._pytorch.execute()  # once
                return None
            return self._execute_mindspore()

    def execute_mindspore(self) -> ApplyReport:
        """Run the MindSpore path whatever the framework says; the providers run once, later calls re-apply."""
        with self._lock:
            if self._executed:
                return self.registry().apply()
            return self._execute_mindspore("mindspore")

    def repatch(self, args: Any) -> ApplyReport | None:
        """Revert, then let the providers register again with ``args`` and apply (``MindSporeAdaptation.repatch``)."""
        framework = getattr(args, "ai_framework", None)
        if framework is not None and str(framework).lower() not in FRAMEWORKS:
            from mindspeed_ms.adaptation.errors import FrameworkError

            raise FrameworkError(f"args.ai_framework={framework!r} is not a known framework: choose one of "
                                 + ", ".join(map(repr, FRAMEWORKS)))
        with self._lock:
            registry = self.registry()
            registry.revert()
            if self._run is not None:
                for name in self._run.registered:
                    registry.withdraw_provider(name)
            self._executed, self._report, self._run, self._args = False, None, None, args
            self._framework = None  # decided again: args.ai_framework may choose
            return self.execute()

    def close(self) -> None:
        """Revert what this adaptation applied, in both registries, and cancel its deferred PyTorch-mode work.

        MindSpeed's manager facade, if this adaptation handed it its registry, is handed nothing again.
        """
        with self._lock:
            if self._handed_over:
                from mindspeed_ms.patch_manager.binding import default_binding

                binding = default_binding()
                previous = binding.hand_over(None)
                if getattr(previous, "__self__", None) is not self:  # someone else's since: leave theirs
                    binding.hand_over(previous)
                self._handed_over = False
            self._pytorch.close()
            for registry in self.registries():
                registry.revert()

    def _execute_mindspore(self, framework: str | None = None) -> ApplyReport:
        from mindspeed_ms.adaptation.backend import prepare_backend
        from mindspeed_ms.adaptation.log import configure_logging, log_summary

        settings = self.settings
        configure_logging(settings)
        prepare_backend()
        runtime = self._apply_runtime_settings()
        registry = self.registry()
        self.hand_over_to_manager(self.registry)
        run = self.run_providers(registry, framework=framework, enforce_blocks=True)
        report = registry.apply()
        self._executed, self._report, self._run = True, report, run
        log_summary(report, run, runtime)
        if settings.parity_dir:
            from mindspeed_ms.parity.install import install_from_environment

            install_from_environment(registry)
        return report

    def _apply_runtime_settings(self) -> tuple[RuntimeSetting, ...]:
        if self._runtime is None:  # MindSpore accepts some settings once per process
            from mindspeed_ms.adaptation.runtime import apply_runtime_settings
            from mindspeed_ms.device import device_target

            self._runtime = apply_runtime_settings(device_target(), self.settings)
        return self._runtime

    def hand_over_to_manager(self, registry: Callable[[], PatchRegistry]) -> None:
        """Have MindSpeed's manager facade fill ``registry()`` outside provider blocks, until :meth:`close`.

        Args:
            registry: returns the registry the mode executed applies: :meth:`registry` in MindSpore
                mode, :meth:`pytorch_registry` in PyTorch mode (execution applies no other there).
        """
        from mindspeed_ms.patch_manager.binding import default_binding

        default_binding().hand_over(registry)
        self._handed_over = True

    # -- tracing ------------------------------------------------------------------------------------
    def _arm_trace_report(self) -> None:
        """Have the default registry's call-trace report written when the process ends, also by a crash."""
        from mindspeed_ms.adaptation.tracing import arm_logged_trace_report

        arm_logged_trace_report(lambda: self._registry, self.settings.trace_file)
        self._trace_armed = True


_default: Adaptation | None = None
_default_lock = _thread.RLock()


def default_adaptation() -> Adaptation:
    """Return the process's default Adaptation (the adaptor's, :class:`MindSporeAdaptation`'s), creating it once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Adaptation()
        return _default


def replace_default_adaptation(adaptation: Adaptation | None) -> Adaptation | None:
    """Make ``adaptation`` the process's default (None: a fresh one on next use); return the one it replaces.

    For tests that exercise :class:`MindSporeAdaptation` on an Adaptation of their own::

        previous = replace_default_adaptation(Adaptation(settings=Settings()))
        try: ...
        finally:
            replace_default_adaptation(previous).close()
    """
    global _default
    with _default_lock:
        previous, _default = _default, adaptation
        return previous

