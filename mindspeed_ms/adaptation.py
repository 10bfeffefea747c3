"""MindSporeAdaptation: the framework switch, provider collection, apply-once and the report.

This is the machinery behind ``import mindspeed_ms.adaptor``; importing *this* module has no side
effect, so the CLI and the pytest plugin can use it. It is imported in PyTorch mode too, where it
must cost next to nothing: everything beyond ``os``/``sys`` and :mod:`mindspeed_ms.framework`
(the registry, ``logging``, the providers, ``importlib.metadata``) is imported inside the functions
that need it, on the MindSpore path only.
"""

from __future__ import annotations

import _thread
import os
import sys

from mindspeed_ms.framework import FRAMEWORKS, get_ai_framework, with_declared_flags
from mindspeed_ms.framework import get_args as parse_args
from mindspeed_ms.tracing import current_rank
from mindspeed_ms.tracing import write_trace_report as _write_report

# ``typing`` costs ~2 ms to import and a bare interpreter has not loaded it; annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from collections.abc import Mapping, Sequence
    from typing import Any

    from mindspeed_ms.engine.patch_record import PatchRecord
    from mindspeed_ms.engine.registry import PatchRegistry
    from mindspeed_ms.engine.status import ApplyReport, PatchStatus
    from mindspeed_ms.providers import ProviderRun
    from mindspeed_ms.runtime import RuntimeSetting

__all__ = ["MindSporeAdaptation", "default_registry", "pytorch_registry", "execute_mindspore", "prepare_backend",
           "run_providers", "collect_patches", "PARITY_DIR_ENV",
           "configure_logging", "current_rank", "write_trace_report", "LOG_LEVEL_ENV", "TRACE_ENV",
           "TRACE_FILE_ENV"]

LOG_LEVEL_ENV = "MINDSPEED_MS_LOG_LEVEL"
TRACE_ENV = "MINDSPEED_MS_TRACE"
#: "skip": a registered target that does not exist is skipped (with a warning) instead of failing apply()
MISSING_TARGETS_ENV = "MINDSPEED_MS_MISSING_TARGETS"
TRACE_FILE_ENV = "MINDSPEED_MS_TRACE_FILE"
PARITY_DIR_ENV = "MINDSPEED_MS_PARITY_DIR"  # parity.capture's switch, named here to avoid importing it
#: Files an NVIDIA driver provides; without them PyTorch has no CUDA device (checked without importing torch).
_CUDA_DEVICE_FILES = ("/dev/nvidiactl", "/proc/driver/nvidia/version")


class _State:
    """Process-wide state of the default adaptation (one module-level instance)."""

    def __init__(self) -> None:
        self.lock = _thread.RLock()
        self.registry: PatchRegistry | None = None
        self.executed = False
        self.report: ApplyReport | None = None
        self.run: ProviderRun | None = None
        self.args: Any = None  # set by repatch()
        self.trace_armed = False
        self.runtime: tuple[RuntimeSetting, ...] | None = None  # MindSpore runtime settings, once applied
        self.pytorch_registry: PatchRegistry | None = None  # PyTorch mode's own patches
        self.pytorch_done = False  # PyTorch mode's one-time work (pytorch_cpu provider, parity capture) ran


_state = _State()


def _logger() -> logging.Logger:
    import logging

    return logging.getLogger(__name__)


def _switch(variable: str) -> bool:
    """Read an on/off environment variable (see :func:`mindspeed_ms.engine.environment.read_switch`)."""
    from mindspeed_ms.engine.environment import read_switch

    return read_switch(variable)


def default_registry() -> PatchRegistry:
    """Return the process-wide registry behind :class:`MindSporeAdaptation`, creating it on first use.

    Call tracing is on when ``MINDSPEED_MS_TRACE`` is ``1``/``true``/``yes``/``on`` at creation;
    ``MINDSPEED_MS_MISSING_TARGETS=skip`` skips (and warns about) registered targets that do not exist
    instead of failing ``apply()``.

    Raises:
        SettingError: ``MINDSPEED_MS_MISSING_TARGETS`` is neither ``error`` nor ``skip``, or
            ``MINDSPEED_MS_TRACE`` is not an on/off value (a ``ValueError``).
    """
    with _state.lock:
        if _state.registry is None:
            from mindspeed_ms.engine.errors import SettingError
            from mindspeed_ms.engine.registry import MISSING_TARGET_POLICIES, PatchRegistry

            raw = os.environ.get(MISSING_TARGETS_ENV, "")
            policy = raw.strip().lower() or "error"
            if policy not in MISSING_TARGET_POLICIES:
                raise SettingError(MISSING_TARGETS_ENV, raw, "'error' (the default) or 'skip'")
            _state.registry = PatchRegistry(name="mindspeed_ms", trace=_switch(TRACE_ENV), missing_targets=policy)
            if _state.registry.trace and os.environ.get(TRACE_FILE_ENV):
                _arm_trace_report()  # PyTorch mode too: MindSporeAdaptation.register()/apply() are traced
        return _state.registry


def configure_logging(environ: Mapping[str, str] | None = None) -> None:
    """Send the ``mindspeed_ms`` loggers to stderr at the level of ``MINDSPEED_MS_LOG_LEVEL`` (default INFO).

    A stderr handler is added only when neither the ``mindspeed_ms`` logger nor the root logger has a
    handler (an application that configured logging keeps its own routing). Nothing goes to stdout.
    """
    import logging

    class _Formatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            prefix = "mindspeed_ms" if record.levelno == logging.INFO else f"mindspeed_ms {record.levelname}"
            return f"{prefix}: {super().format(record)}"

    class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """Write to whatever ``sys.stderr`` is when a record is emitted (it may be swapped later)."""

        def emit(self, record: logging.LogRecord) -> None:
            self.stream = sys.stderr
            super().emit(record)

    env = os.environ if environ is None else environ
    package = logging.getLogger("mindspeed_ms")
    text = (env.get(LOG_LEVEL_ENV) or "INFO").strip()
    # str.isdigit() also accepts '²', which int() rejects: only ASCII digits are a numeric level
    level = int(text) if text.isascii() and text.isdigit() else logging.getLevelName(text.upper())
    if not package.handlers and not logging.getLogger().handlers:
        handler = _StderrHandler(sys.stderr)
        handler.setFormatter(_Formatter("%(message)s"))
        package.addHandler(handler)
        package.propagate = False
    package.setLevel(level if isinstance(level, int) else logging.INFO)
    if not isinstance(level, int):
        package.warning("%s=%r is not a logging level (use DEBUG, INFO, WARNING, ERROR or a number); "
                        "using INFO", LOG_LEVEL_ENV, text)


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
            from mindspeed_ms.framework import BackendImportError

            raise BackendImportError(
                f"torch ({where}) was imported before mindspeed_ms.adaptor: in MindSpore mode "
                f"'import mindspeed_ms.adaptor' must be the first import of the training script, so that "
                f"'import torch' resolves to MSAdapter", name="torch")
    try:
        import msadapter  # noqa: F401 - imported for its effect: `import torch` now gives MSAdapter
    except ModuleNotFoundError as exc:
        if exc.name != "msadapter":
            raise
        from mindspeed_ms.framework import BackendNotInstalledError
        from mindspeed_ms.versions import MSADAPTER_INSTALL  # the version table; read only on this error path

        raise BackendNotInstalledError(
            f"MindSpore mode (--ai-framework mindspore) needs MSAdapter, which provides 'torch' on top of "
            f"MindSpore, and it is not installed: {MSADAPTER_INSTALL} (or: pip install 'mindspeed_ms[mindspore]')",
            name="msadapter") from exc


def run_providers(registry: PatchRegistry, args: Any, environ: Mapping[str, str] | None = None, *,
                  enforce_blocks: bool = False, argv: Sequence[str] | None = None) -> ProviderRun:
    """Discover every provider (built-in, then entry points, minus disabled ones) and let it register.

    Args:
        registry: the registry to fill.
        args: the namespace handed to the providers.
        environ: the environment (``MINDSPEED_MS_DISABLE``); ``os.environ`` when None.
        enforce_blocks: put the providers' declared module blocks in force before any of them runs
            (the adaptation does; listing and verification do not).
        argv: the command line the providers' declared flags (``register_args``) are parsed from;
            ``sys.argv[1:]`` when None (see :func:`mindspeed_ms.framework.with_declared_flags`).

    Returns:
        What registered and what was skipped (disabled providers included).

    Raises:
        ProviderError: a provider failed to load or to register; every registration of the run was
            withdrawn.
    """
    from mindspeed_ms.providers import ProviderRun, discover_providers, register_providers

    discovery = discover_providers(environ)
    declarations = [p.register_args for p in discovery.providers if p.register_args is not None]
    args = with_declared_flags(args, declarations, argv)
    run = register_providers(registry, discovery.providers, args, enforce_blocks=enforce_blocks)
    return ProviderRun(run.registered, discovery.disabled + run.skipped)


def collect_patches(framework: str = "mindspore", argv: Sequence[str] = (),
                    environ: Mapping[str, str] | None = None) -> tuple[PatchRegistry, ProviderRun]:
    """Let every provider register into a fresh registry, as ``execute()`` would, without applying.

    Nothing is imported but the providers themselves (this is what ``mindspeed-ms patches`` and
    ``verify`` list).

    Args:
        framework: the ``ai_framework`` the providers see.
        argv: training-script flags handed to the providers (as :func:`get_args` parses them).
        environ: the environment (``MINDSPEED_MS_DISABLE``); ``os.environ`` when None.

    Returns:
        The filled registry and what the providers did.

    Raises:
        ProviderError: a provider failed to load or to register.
    """
    from mindspeed_ms.engine.registry import PatchRegistry

    args = parse_args(argv)
    args.ai_framework = framework
    registry = PatchRegistry(name="mindspeed-ms")
    return registry, run_providers(registry, args, environ, argv=argv)


def _log_summary(report: ApplyReport, run: ProviderRun, runtime: Sequence[RuntimeSetting] = ()) -> None:
    logger = _logger()
    line = f"MindSpore backend, {report.summary()}"
    if run.skipped:
        line += "; providers skipped: " + ", ".join(f"{item.name} ({item.reason})" for item in run.skipped)
    if runtime:
        line += "; runtime: " + ", ".join(setting.describe() for setting in runtime)
    logger.log(20 if current_rank() == 0 else 10, "%s", line)
    for status in report.statuses:
        logger.debug("%s: %s%s%s%s", status.target, status.state,
                     f" -> {status.replacement}" if status.replacement else "",
                     f" [{status.provider}]" if status.provider else "",
                     f" ({status.reason})" if status.reason else "")


def write_trace_report(path: str, registry: PatchRegistry | None = None) -> str:
    """Write the call-tracing report of ``registry`` (the default one when None); see :mod:`mindspeed_ms.tracing`."""
    return _write_report(path, registry or default_registry())


def _arm_trace_report() -> None:
    """Have the default registry's call-trace report written when the process ends, also by a crash."""
    from mindspeed_ms.tracing import arm_trace_report

    def written(path: str | None, error: BaseException | None) -> None:
        if error is not None:
            _logger().error("cannot write the call-trace report to %r: %s", os.environ.get(TRACE_FILE_ENV), error)
        else:
            _logger().info("call-trace report written to %s", path)

    arm_trace_report(lambda: _state.registry, lambda: os.environ.get(TRACE_FILE_ENV), written)
    _state.trace_armed = True


def _apply_runtime_settings() -> tuple[RuntimeSetting, ...]:
    from mindspeed_ms.device import device_target
    from mindspeed_ms.runtime import apply_runtime_settings

    with _state.lock:
        if _state.runtime is None:  # MindSpore accepts some settings once per process
            _state.runtime = apply_runtime_settings(device_target())
        return _state.runtime


def _execute_mindspore(args: Any) -> ApplyReport:
    configure_logging()
    prepare_backend()
    runtime = _apply_runtime_settings()
    registry = default_registry()
    if _switch(TRACE_ENV):
        registry.trace = True
    if registry.trace and not _state.trace_armed:  # before anything can fail: a crash still gets its report
        _arm_trace_report()
    if not getattr(args, "ai_framework", None):
        args.ai_framework = "mindspore"
    run = run_providers(registry, args, enforce_blocks=True)
    report = registry.apply()
    _state.executed, _state.report, _state.run = True, report, run
    _log_summary(report, run, runtime)
    if os.environ.get(PARITY_DIR_ENV):
        from mindspeed_ms.parity.capture import install_from_environment

        install_from_environment(registry)
    return report


def pytorch_registry() -> PatchRegistry:
    """Return the registry of PyTorch mode's own patches (``pytorch_cpu``, a parity capture), creating it once.

    It is not the default registry: registrations meant for MindSpore mode are never applied in PyTorch mode.
    """
    with _state.lock:
        if _state.pytorch_registry is None:
            from mindspeed_ms.engine.registry import PatchRegistry

            _state.pytorch_registry = PatchRegistry(name="mindspeed_ms.pytorch")
        return _state.pytorch_registry


def _has_cuda_device() -> bool:
    """Tell whether an NVIDIA driver is present, without importing torch (a file check)."""
    return any(os.path.exists(path) for path in _CUDA_DEVICE_FILES)


class _ArmOnImport:
    """A ``sys.meta_path`` entry that runs ``action`` once, when a module of package ``name`` is first looked for.

    It finds nothing itself (the import goes on through the other finders); it only defers work that
    is wanted once that package is used, so that importing the adaptor stays free.
    """

    def __init__(self, name: str, action: Any) -> None:
        self.name = name
        self.action = action

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == self.name or fullname.startswith(self.name + "."):
            try:
                sys.meta_path.remove(self)
            except ValueError:  # another thread got here first
                return None
            self.action()
        return None


def _arm_pytorch_cpu(args: Any) -> None:
    from mindspeed_ms.patches import pytorch_cpu
    from mindspeed_ms.providers import as_provider, register_providers

    configure_logging()
    registry = pytorch_registry()
    args.ai_framework = "pytorch"
    register_providers(registry, [as_provider(pytorch_cpu, "pytorch_cpu", pytorch_cpu.__name__)], args)
    report = registry.apply()
    _logger().log(20 if current_rank() == 0 else 10, "PyTorch backend without CUDA, %s", report.summary())


def _execute_pytorch(args: Any) -> None:
    """PyTorch mode: the ``pytorch_cpu`` provider on a machine without CUDA, and a parity capture if asked.

    The ``pytorch_cpu`` patches all concern megatron-core: they are registered when ``megatron`` is
    first imported (a finder armed now), so the adaptor's import itself stays free.
    """
    parity = bool(os.environ.get(PARITY_DIR_ENV))
    disabled = {item.strip() for item in os.environ.get("MINDSPEED_MS_DISABLE", "").split(",")}
    cpu = not _has_cuda_device() and "pytorch_cpu" not in disabled
    # MINDSPEED_MS_ADOPT_MINDSPEED=1: MindSpeed's patch manager on our engine in PyTorch mode too (opt-in)
    adopt = False
    if (os.environ.get("MINDSPEED_MS_ADOPT_MINDSPEED") or "").strip() and "mindspeed_patch_manager" not in disabled:
        from mindspeed_ms.patch_manager.adoption import adoption_wanted  # a malformed value raises SettingError

        adopt = adoption_wanted("pytorch")
    _state.pytorch_done = True
    if cpu:
        if "megatron" in sys.modules:
            _arm_pytorch_cpu(args)
        else:
            sys.meta_path.insert(0, _ArmOnImport("megatron", lambda: _arm_pytorch_cpu(args)))
    if adopt or parity:
        configure_logging()
    if adopt:
        from mindspeed_ms.patch_manager.adoption import register_adoption

        registry = pytorch_registry()
        with registry.provider("mindspeed_patch_manager"):
            register_adoption(registry)
        registry.apply()
    if parity:
        from mindspeed_ms.parity.capture import install_from_environment

        install_from_environment(pytorch_registry())


def execute_mindspore() -> ApplyReport:
    """Run :meth:`MindSporeAdaptation.execute`'s MindSpore path whatever the framework switch says.

    The providers run once per process (they see ``ai_framework="mindspore"``); later calls only
    apply again what a :meth:`~MindSporeAdaptation.revert` undid. Used by the ``mindspore_adaptation``
    pytest fixture.

    Returns:
        The report of the apply.
    """
    with _state.lock:
        if _state.executed:
            return default_registry().apply()
        args = MindSporeAdaptation.get_args()
        args.ai_framework = "mindspore"
        return _execute_mindspore(args)


class MindSporeAdaptation:
    """The default adaptation: a process-wide :class:`~mindspeed_ms.PatchRegistry` behind MindSpeed-LLM's API.

    Modeled on MindSpeed-LLM's ``MegatronAdaptation``/``MindSporeAdaptation``; every method is a
    classmethod over the module-level default registry. ``register``/``apply``/``revert`` work in
    either framework mode; only :meth:`execute` is gated by the framework.
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
            force_patch: replace an earlier replacement of the same target (True, as in MindSpeed-LLM).
            create_dummy: create the missing modules/attribute as stubs instead of failing.
            check_patch: log each call into the patch (MindSpeed-LLM printed it).
            **options: ``kind`` (``"auto"``/``"replace"``/``"wrap"``), ``requires`` (PEP 508), ``purpose``.

        Returns:
            The target's :class:`~mindspeed_ms.PatchRecord`.

        Raises:
            PatchValidationError: malformed target, kind, replacement or requirement.
            PatchConflictError: another replacement is registered and ``force_patch`` is False.
        """
        from mindspeed_ms.engine.registry import registry_being_filled

        # Called by a provider (the porting recipe), it fills the registry that provider was handed.
        registry = registry_being_filled()
        if registry is None:  # not `or`: an empty registry is falsy (it has a length)
            registry = default_registry()
        return registry.register(orig_func_name, new_func, force_patch=force_patch, create_dummy=create_dummy,
                                 log_calls=check_patch, **options)

    @classmethod
    def apply(cls) -> ApplyReport:
        """Apply every registered patch not applied yet (see :meth:`PatchRegistry.apply`)."""
        return default_registry().apply()

    @classmethod
    def revert(cls) -> None:
        """Undo every applied patch exactly (see :meth:`PatchRegistry.revert`)."""
        default_registry().revert()

    @classmethod
    def status(cls) -> list[PatchStatus]:
        """Return the status of every patch of the default registry (with call counts when tracing)."""
        return default_registry().status()

    @classmethod
    def registry(cls) -> PatchRegistry:
        """Return the default registry."""
        return default_registry()

    @classmethod
    def providers(cls) -> ProviderRun | None:
        """Return which providers registered and which were skipped, or None before :meth:`execute`."""
        return _state.run

    @classmethod
    def runtime_settings(cls) -> tuple[RuntimeSetting, ...] | None:
        """Return the MindSpore runtime settings applied (see :mod:`mindspeed_ms.runtime`), or None before."""
        return _state.runtime

    @classmethod
    def get_args(cls) -> Any:
        """Return the arguments providers get: those given to :meth:`repatch`, else ``sys.argv``'s flags.

        The namespace has one attribute per ``--flag value`` (see :func:`mindspeed_ms.framework.get_args`).
        """
        return _state.args if _state.args is not None else parse_args()

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
            ImportError: MSAdapter is missing, or torch was imported before the adaptor.
            ProviderError: a provider failed; its registrations were withdrawn.
            PatchApplyError: a patch failed; the batch was rolled back.
        """
        with _state.lock:
            if _state.executed:
                return _state.report
            framework = getattr(_state.args, "ai_framework", None) or get_ai_framework()
            if str(framework).lower() != "mindspore":
                if not _state.pytorch_done:
                    _execute_pytorch(cls.get_args())
                return None
            return _execute_mindspore(cls.get_args())

    @classmethod
    def repatch(cls, args: Any) -> ApplyReport | None:
        """Revert, then collect the providers again with ``args`` and apply (configuration outside argv).

        ``args`` is any namespace (e.g. Megatron's parsed arguments); its ``ai_framework`` attribute,
        when set, chooses the framework, else ``--ai-framework``/``MINDSPEED_AI_FRAMEWORK`` do.
        Registrations made outside providers (also on a provider's targets) stay registered and are
        applied again in MindSpore mode.

        Returns:
            The new report, or None when the framework is PyTorch (everything stays reverted).

        Raises:
            FrameworkError: ``args.ai_framework`` names an unknown framework.
            ImportError, ProviderError, PatchApplyError: as for :meth:`execute`.
        """
        from mindspeed_ms.framework import FrameworkError

        framework = getattr(args, "ai_framework", None)
        if framework is not None and str(framework).lower() not in FRAMEWORKS:
            raise FrameworkError(f"args.ai_framework={framework!r} is not a known framework: choose one of "
                                 + ", ".join(map(repr, FRAMEWORKS)))
        with _state.lock:
            registry = default_registry()
            registry.revert()
            run = _state.run
            if run is not None:
                for name in run.registered:
                    registry.withdraw_provider(name)
            _state.executed, _state.report, _state.run, _state.args = False, None, None, args
            return cls.execute()
