"""PatchRegistry: what is registered, conflicts, provenance, and the apply/revert lifecycle.

Locking: ``_lock`` guards the registry's data and is a leaf lock: it is never held while user
code (wraps, replacements) runs or while anything is imported, so the import hook may take it
briefly without risk of deadlock. The registry creates it and hands it to its
:class:`~mindspeed_ms.engine.applier.Applier` (the applying half, same data, same lock).
``_op_lock`` serializes apply/revert/unregister; the import hook never takes it.

A registration is checked by :mod:`.registration` before it is recorded. Which registry is being
filled (the innermost provider/transaction block's) is per context: a :class:`~contextvars.ContextVar`,
so a thread or an asyncio task started elsewhere does not see another's block.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .applier import MISSING_TARGET_POLICIES, Applier, ApplyOptions
from .errors import PatchConflictError, PatchValidationError, TargetNotFoundError
from .patch_record import PatchRecord, StatusSnapshot, status_of
from .registration import check_registration
from .replacements import NO_REPLACEMENT
from .scopes import RegistrationScopes
from .sites import caller_site
from .status import STATES, ApplyReport, PatchStatus
from .targets import parse_target, suggest
from .watcher import ImportWatcher, default_watcher

__all__ = ["PatchRegistry", "registry_being_filled", "filling", "MISSING_TARGET_POLICIES"]

_being_filled: ContextVar[PatchRegistry | None] = ContextVar("mindspeed_ms_registry_being_filled", default=None)


def registry_being_filled() -> PatchRegistry | None:
    """Return the registry being filled in this context (the innermost provider/transaction/:func:`filling`
    block's), or ``None``: where ``MindSporeAdaptation.register`` and MindSpeed's manager facade register."""
    return _being_filled.get()


@contextmanager
def filling(registry: PatchRegistry) -> Iterator[PatchRegistry]:
    """Make ``registry`` the one :func:`registry_being_filled` returns in this context, for the block (blocks
    nest). It neither attributes nor rolls back registrations: :meth:`PatchRegistry.provider` does."""
    token = _being_filled.set(registry)
    try:
        yield registry
    finally:
        _being_filled.reset(token)


class PatchRegistry:
    """Patches registered by dotted target, applied lazily and atomically, reverted exactly.

    Args:
        name: shown in logs and errors.
        strict: make signature mismatches and deferred failures errors instead of warnings.
        trace: wrap every installed callable in a counting shim (``PatchStatus.calls``).
        watcher: the import watcher deferred patches and blocks subscribe to (the process-wide
            one by default; tests and isolated registries may pass their own).
        missing_targets: what ``apply()`` does with a target that does not exist (and is not
            ``create_dummy``): ``"error"`` (default) fails the batch atomically, as MindSpeed's
            manager raises; ``"skip"`` marks that patch ``skipped`` with the reason, warns, and
            applies the others (for registrations written against another version of their target).

    Raises:
        PatchValidationError: ``missing_targets`` is neither ``"error"`` nor ``"skip"``.
    """

    def __init__(self, name: str = "default", *, strict: bool = False, trace: bool = False,
                 watcher: ImportWatcher | None = None, missing_targets: str = "error") -> None:
        if missing_targets not in MISSING_TARGET_POLICIES:
            raise PatchValidationError(f"missing_targets={missing_targets!r} is unknown: use one of "
                                       f"{', '.join(map(repr, MISSING_TARGET_POLICIES))}")
        self._options = ApplyOptions(name, strict, trace, missing_targets)
        self._patches: dict[str, PatchRecord] = {}
        self._lock = threading.RLock()
        self._op_lock = threading.RLock()
        self._provider: str | None = None
        #: registrations in the current provider() block are fallbacks (a built-in provider's)
        self._fallback = False
        self._scopes = RegistrationScopes()  # the open provider()/transaction() blocks
        self.watcher = watcher if watcher is not None else default_watcher()
        self._applier = Applier(self._options, self._lock, self._patches, self.watcher)

    @property
    def name(self) -> str:
        """Shown in logs and errors."""
        return self._options.name

    @property
    def strict(self) -> bool:
        """Signature mismatches and failures on import are errors instead of warnings."""
        return self._options.strict

    @strict.setter
    def strict(self, value: bool) -> None:
        self._options.strict = value

    @property
    def trace(self) -> bool:
        """Installed callables are wrapped in a counting shim (from the next apply on)."""
        return self._options.trace

    @trace.setter
    def trace(self, value: bool) -> None:
        self._options.trace = value

    @property
    def missing_targets(self) -> str:
        """What ``apply()`` does with a missing target: ``"error"`` or ``"skip"``."""
        return self._options.missing_targets

    # -- registration ----------------------------------------------------------------------------
    def register(self, target: str, new_func: Any = None, *, force_patch: bool = False,
                 create_dummy: bool = False, kind: str = "auto",
                 requires: None | str | Sequence[str] = None, purpose: str | None = None,
                 log_calls: bool = False, site: str | None = None, fallback: bool | None = None,
                 stacklevel: int = 1) -> PatchRecord:
        """Register a replacement or a wrap for ``target``; nothing is imported or patched yet.

        Args:
            target: dotted path of a module, function, class or class attribute.
            new_func: the replacement (``kind="replace"``), a decorator ``wrapper(fn) -> fn``
                (``kind="wrap"``), or ``None`` for a placeholder raising ``NotImplementedError``.
            force_patch: replace an earlier replacement instead of raising a conflict.
            create_dummy: create missing modules/attributes as stubs instead of failing.
            kind: ``"replace"``, ``"wrap"`` or ``"auto"`` (MindSpeed's rule: a name ending in
                ``wrapper`` or ``decorator`` wraps, anything else replaces).
            requires: PEP 508 requirement(s); unmet ones make the patch ``skipped``.
            purpose: one line saying which incompatibility the patch fixes.
            log_calls: log every call of the installed object.
            site: ``file:line`` to record as the registration site (a facade such as the MindSpeed
                patch-manager API names its caller's line); else the line ``stacklevel`` levels up.
            fallback: the replacement is a fallback (mindspeed_ms's built-in providers register
                theirs so): a replacement registered for the same target by anyone else takes the
                target without ``force_patch``, and the fallback waits, visible in ``status()``
                (``superseded``), until that replacement is withdrawn. ``None``: the enclosing
                :meth:`provider` block's setting.
            stacklevel: which caller registers, as :func:`warnings.warn` counts: 1 (default) the
                line calling this method; a function registering on behalf of its caller passes 2.

        Returns:
            The target's :class:`PatchRecord` (one per target).

        Raises:
            PatchValidationError: malformed target, kind, replacement or requirement.
            PatchConflictError: a different replacement is registered already (without ``force_patch``).
        """
        parts, kind, reqs = check_registration(target, new_func, kind, requires)
        site = site or caller_site(stacklevel)
        with self._lock:
            patch = self._patches.get(target)
            created = patch is None
            if patch is None:
                patch = PatchRecord(target, parts)
            elif patch.is_block:
                raise PatchConflictError(f"{target!r} is blocked by this registry ({patch.sources[0]}); "
                                         f"unregister the block before patching it", target=target,
                                         sites=(patch.sources[0], site))
            self._scopes.remember(patch, created)
            if kind == "replace":
                patch.set_replacement(new_func, site, force_patch, self._provider, reqs,
                                      self._fallback if fallback is None else fallback)
            elif not patch.add_wrap(new_func, site, self._provider, reqs):
                return patch
            patch.sites.append((site, self._provider))
            patch.mark_changed()
            patch.create_dummy = patch.create_dummy or create_dummy
            patch.log_calls = patch.log_calls or log_calls
            patch.purpose = patch.purpose or purpose
            patch.provider = patch.provider or self._provider
            if created:
                self._patches[target] = patch
        return patch

    def block(self, module_name: str, *, purpose: str | None = None, site: str | None = None,
              stacklevel: int = 1) -> PatchRecord:
        """Make ``import module_name`` raise ``ModuleNotFoundError`` while this registry is applied.

        A module already imported when the block is applied leaves ``sys.modules`` (and its parent)
        and is put back by :meth:`revert`. ``site`` and ``stacklevel`` say where it was asked for, as
        for :meth:`register`.
        """
        parts = parse_target(module_name)
        site = site or caller_site(stacklevel)
        with self._lock:
            patch = self._patches.get(module_name)
            if patch is not None and not patch.is_block:
                raise PatchConflictError(f"{module_name!r} has patches registered ({patch.sources[0]}); "
                                         f"a module cannot be patched and blocked at once", target=module_name,
                                         sites=(patch.sources[0], site))
            if patch is None:
                patch = PatchRecord(module_name, parts, is_block=True)
                self._scopes.remember(patch, True)
                patch.sites.append((site, self._provider))
                patch.purpose = purpose
                patch.provider = self._provider
                self._patches[module_name] = patch
            elif all(owner != self._provider for _, owner in patch.sites):
                # the same block wanted by someone else too: it stays while either still wants it
                self._scopes.remember(patch, False)
                patch.sites.append((site, self._provider))
                patch.purpose = patch.purpose or purpose
        return patch

    def unregister(self, target: str, new_func: Any = None) -> None:
        """Remove one wrap or the replacement ``new_func`` of ``target``, or (``None``) the whole target.

        An applied patch is reverted at once; what remains registered is applied by the next ``apply()``.

        Raises:
            TargetNotFoundError: nothing is registered for ``target``, or ``new_func`` is not registered there.
        """
        with self._op_lock:
            with self._lock:
                patch = self._patches.get(target)
                if patch is None:
                    close = suggest(target, self._patches)
                    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                    raise TargetNotFoundError(f"nothing is registered for {target!r}{hint}", target=target,
                                              missing=target, suggestions=close)
                if new_func is not None and patch.replacement is not new_func and \
                        not any(wrap[0] is new_func for wrap in patch.wraps) and \
                        not any(entry[0] is new_func for entry in patch.yielded):
                    raise TargetNotFoundError(f"{new_func!r} is not registered for {target!r}", target=target)
                self._scopes.remember(patch, False)  # a failing provider scope puts it back
            self._applier.withdraw(patch)
            with self._lock:
                if new_func is None:
                    del self._patches[target]
                    return
                patch.yielded = [entry for entry in patch.yielded if entry[0] is not new_func]
                if patch.replacement is new_func:
                    patch.clear_replacement()
                patch.wraps = [wrap for wrap in patch.wraps if wrap[0] is not new_func]
                if not patch.kinds:
                    del self._patches[target]

    def unregister_replacement(self, target: str) -> None:
        """Remove the replacement of ``target`` (a placeholder too), keeping its wraps.

        The latest fallback waiting behind it takes its place; with nothing else registered the target
        goes. An applied patch is reverted at once, as by :meth:`unregister`.

        Raises:
            TargetNotFoundError: nothing is registered for ``target``.
        """
        with self._op_lock:
            with self._lock:
                patch = self._patches.get(target)
                if patch is None or patch.is_block:
                    raise TargetNotFoundError(f"nothing is registered for {target!r}", target=target,
                                              missing=target)
                if patch.replacement is NO_REPLACEMENT:
                    return
                self._scopes.remember(patch, False)
            self._applier.withdraw(patch)
            with self._lock:
                patch.clear_replacement()
                if not patch.kinds:
                    del self._patches[target]

    @contextmanager
    def provider(self, name: str, *, fallback: bool = False) -> Iterator[PatchRegistry]:
        """Attribute registrations inside the block to provider ``name``; all or nothing.

        With ``fallback``, the block's replacements are fallbacks (see :meth:`register`).

        If the block raises, every registration made inside it is withdrawn (and what it
        unregistered is registered again) and the exception propagates. While the block runs,
        :func:`registry_being_filled` returns this registry (so ``MindSporeAdaptation.register``
        called by a provider registers here).
        """
        with self._scope(name, fallback=fallback):
            yield self

    @contextmanager
    def transaction(self) -> Iterator[PatchRegistry]:
        """Run a block of registrations all or nothing: if it raises, the registrations are as before."""
        with self._scope(None, keep_provider=True):
            yield self

    @contextmanager
    def _scope(self, name: str | None, *, keep_provider: bool = False, fallback: bool = False
               ) -> Iterator[None]:
        with self._lock:
            scope = self._scopes.open()
            outer, outer_fallback = self._provider, self._fallback
            if not keep_provider:
                self._provider, self._fallback = name, fallback
        try:
            with filling(self):
                yield
        except BaseException:
            with self._lock:
                self._scopes.roll_back(scope, self._patches)
            raise
        finally:
            with self._lock:
                self._scopes.close(scope)
                self._provider, self._fallback = outer, outer_fallback

    def withdraw_provider(self, name: str) -> list[str]:
        """Remove exactly what provider ``name`` registered (reverting it at once where applied).

        Registrations of other providers or of the user on the same targets stay registered and are
        applied again by the next ``apply()``.

        Returns:
            The targets that were touched.
        """
        with self._op_lock:
            with self._lock:
                touched = [p for p in self._patches.values() if any(owner == name for _, owner in p.sites)]
            for patch in touched:
                if patch.state not in ("registered", "reverted"):
                    self._applier.withdraw(patch)
                with self._lock:
                    if not patch.drop_provider(name):
                        self._patches.pop(patch.target, None)
            return [patch.target for patch in touched]

    def patches(self) -> list[PatchRecord]:
        """Return the :class:`PatchRecord` of every target (blocks included), in registration order.

        The records are the registry's own: read them, do not change them.
        """
        with self._lock:
            return list(self._patches.values())

    # -- apply / revert ---------------------------------------------------------------------------
    @property
    def is_applied(self) -> bool:
        return self._applier.applied

    def apply(self, targets: Sequence[str] | None = None) -> ApplyReport:
        """Apply every patch not applied yet (or only those of ``targets``); idempotent and atomic per call.

        Targets in imported modules are patched now (and ``from``-imported aliases rebound in one
        pass); the others when their module finishes importing. With ``targets``, only those are
        applied (MindSpeed's ``patches_info[t].apply_patch()`` before the others); the rest stay
        ``registered`` until the next ``apply()``.

        Raises:
            PatchApplyError: a patch of this batch failed; everything the batch changed was undone.
        """
        chosen = None if targets is None else set(targets)
        with self._op_lock:
            with self._lock:
                batch = [p for p in self._patches.values() if (p.state in ("registered", "reverted") or p.dirty)
                         and (chosen is None or p.target in chosen)]
            self._applier.apply(batch)
            return self.report()

    def apply_blocks(self) -> None:
        """Put the registered module blocks in force now, before the other patches are applied.

        The registry counts as applied from then on; the next :meth:`apply` applies the rest.

        Raises:
            PatchApplyError: a block failed; nothing changed.
        """
        with self._op_lock:
            with self._lock:
                batch = [p for p in self._patches.values() if p.is_block and p.state in ("registered", "reverted")]
            self._applier.apply(batch)

    def revert(self) -> None:
        """Undo everything applied, in reverse order; disarm hooks, lift blocks. Idempotent."""
        with self._op_lock:
            with self._lock:
                patches = list(self._patches.values())
            self._applier.revert_all(patches)

    @contextmanager
    def applied(self) -> Iterator[ApplyReport]:
        """Apply on entry, revert on exit (also when the block raises)."""
        report = self.apply()
        try:
            yield report
        finally:
            self.revert()

    # -- status -----------------------------------------------------------------------------------
    def status(self) -> list[PatchStatus]:
        """Return a snapshot of every patch, in registration order."""
        return [status_of(snapshot) for snapshot in self._snapshots()]

    def report(self) -> ApplyReport:
        """Count the patches per state; the report's statuses are this moment's (built when first read)."""
        snapshots = self._snapshots()
        counts = {state: 0 for state in STATES}
        for snapshot in snapshots:
            counts[snapshot[1]] += 1
        return ApplyReport(self.name, counts, lambda: tuple(map(status_of, snapshots)))

    def _snapshots(self) -> list[StatusSnapshot]:
        if self._applier.applied:
            # a watched module may have been imported past the watcher (a finder put ahead of it)
            self.watcher.catch_up()
        traced = self.trace
        with self._lock:
            return [patch.snapshot(traced) for patch in self._patches.values()]

    def __len__(self) -> int:
        return len(self._patches)

    def __contains__(self, target: object) -> bool:
        return target in self._patches

    def __repr__(self) -> str:
        return f"<PatchRegistry {self.name!r}: {len(self._patches)} patches, applied={self.is_applied}>"
