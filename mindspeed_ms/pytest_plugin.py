"""pytest plugin of mindspeed_ms (registered through the ``pytest11`` entry point).

Fixtures:
    ``patch_registry``: a fresh :class:`~mindspeed_ms.PatchRegistry`, reverted at teardown.
    ``mindspore_adaptation``: the default adaptation (MSAdapter, every provider) applied for one
    test and reverted after; it yields :class:`~mindspeed_ms.adaptation.MindSporeAdaptation`.

Option ``--mindspeed-ms-verify`` adds one test item per target registered by the providers
(built-in and entry points): each resolves its target and checks the replacement's signature, so
a downstream CI fails by name when an upstream rename breaks a patch. ``--mindspeed-ms-static``
resolves by reading sources instead of importing. The providers see the framework a training
script started with those flags would get (``--ai-framework`` among ``--mindspeed-ms-training-args``,
else ``MINDSPEED_AI_FRAMEWORK``, else ``pytorch``); in MindSpore mode MSAdapter is imported before
the targets, as in training.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mindspeed_ms.adaptation import MindSporeAdaptation
    from mindspeed_ms.adaptation.verify import TargetCheck
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["patch_registry", "mindspore_adaptation", "VerifyItem"]

_VERIFY = "--mindspeed-ms-verify"
_STATIC = "--mindspeed-ms-static"
_TRAINING_ARGS = "--mindspeed-ms-training-args"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mindspeed_ms", "mindspeed_ms patch verification")
    group.addoption(_VERIFY, action="store_true", default=False,
                    help="add one test per target registered by the mindspeed_ms providers (built-in and "
                         "entry points): it resolves the target and checks the replacement's signature")
    group.addoption(_STATIC, action="store_true", default=False,
                    help=f"with {_VERIFY}: resolve targets by reading sources, importing nothing")
    group.addoption(_TRAINING_ARGS, default="", metavar="ARGS",
                    help=f"with {_VERIFY}: the training script's flags the providers see, as one shell-quoted "
                         f"string (e.g. \"--use-ascend-coc --seq1f1b-splits 4\"), parsed as the CLI parses "
                         f"those after --")


@pytest.fixture()
def patch_registry(request: pytest.FixtureRequest) -> Iterator[PatchRegistry]:
    """Yield a fresh PatchRegistry; whatever it applied is reverted at teardown."""
    from mindspeed_ms.engine.registry import PatchRegistry

    registry = PatchRegistry(name=f"pytest:{request.node.name}")
    try:
        yield registry
    finally:
        registry.revert()


@pytest.fixture()
def mindspore_adaptation() -> Iterator[type[MindSporeAdaptation]]:
    """Apply the default MindSpore adaptation for one test (imports MSAdapter); revert it after."""
    from mindspeed_ms.adaptation.mindspore_adaptation import MindSporeAdaptation, execute_mindspore

    execute_mindspore()
    try:
        yield MindSporeAdaptation
    finally:
        MindSporeAdaptation.revert()


class _VerifyFailure(Exception):
    def __init__(self, check: TargetCheck) -> None:
        super().__init__(check.reason)
        self.check = check


class _VerifySession(pytest.Collector):
    """Parent of the verify items: lifts the providers' module blocks and MSAdapter around them."""

    def __init__(self, *, registry: Any, framework: str, static: bool, error: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.registry, self.framework, self.static, self.error = registry, framework, static, error
        self._blocks: Any = None
        self.resolver: Any = None

    def collect(self) -> list[pytest.Item]:
        if self.error is not None:
            return [_ProviderErrorItem.from_parent(self, name="providers", message=self.error)]
        return [VerifyItem.from_parent(self, name=patch.target, patch=patch)
                for patch in self.registry.patches() if not patch.is_block]

    def setup(self) -> None:
        if self.error is not None:
            return
        if self.static:
            from mindspeed_ms.adaptation.verify import static_resolver

            self.resolver = static_resolver()  # reads `torch` as the runtime maps it (MSAdapter)
            return
        from mindspeed_ms.adaptation.backend import prepare_backend
        from mindspeed_ms.engine.registry import PatchRegistry

        if self.framework == "mindspore":
            prepare_backend()
        self._blocks = PatchRegistry(name="pytest:verify-blocks")
        for patch in self.registry.patches():
            if patch.is_block:
                self._blocks.block(patch.target)
        self._blocks.apply()

    def teardown(self) -> None:
        if self._blocks is not None:
            self._blocks.revert()


class VerifyItem(pytest.Item):
    """One registered target: passes when it resolves and its replacement accepts the original's calls."""

    def __init__(self, *, patch: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.patch = patch
        self.provider = patch.provider
        self.user_properties.append(("provider", patch.provider))

    def runtest(self) -> None:
        from mindspeed_ms.adaptation.verify import check_target

        parent: _VerifySession = self.parent  # type: ignore[assignment]  # always, see _VerifySession.collect
        check = check_target(self.patch, static=parent.static, resolver=parent.resolver)
        self.user_properties.append(("state", check.state))
        if check.state == "skipped":
            pytest.skip(f"{check.target}: {check.reason}")
        if check.is_failure:
            raise _VerifyFailure(check)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, _VerifyFailure):
            check = excinfo.value.check
            return (f"{check.target}: {check.state}: {check.reason}\n"
                    f"  registered at {check.registered_at} by provider {check.provider!r}")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"verify {self.name} (provider {self.provider})"


class _ProviderErrorItem(pytest.Item):
    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise pytest.fail(self.message, pytrace=False)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "mindspeed_ms providers"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption(_VERIFY):
        return
    import shlex

    from mindspeed_ms.adaptation.core import Adaptation
    from mindspeed_ms.adaptation.framework import DEFAULT_FRAMEWORK
    from mindspeed_ms.engine.errors import AdaptationError

    static = bool(config.getoption(_STATIC))
    error = None
    registry = None
    framework = DEFAULT_FRAMEWORK
    try:
        training_args = shlex.split(config.getoption(_TRAINING_ARGS) or "")
        adaptation = Adaptation(argv=training_args)  # decides as the training script would
        framework = adaptation.framework.name
        registry, _ = adaptation.collect_patches(argv=training_args)
    except AdaptationError as exc:
        error = f"{type(exc).__name__}: {exc}"
    parent = _VerifySession.from_parent(session, name="mindspeed-ms-verify", registry=registry,
                                        framework=framework, static=static, error=error)
    added = parent.collect()
    items.extend(added)
    # Report them like collected items, so "collected N items" counts them too.
    result: list[pytest.Item | pytest.Collector] = list(added)
    config.hook.pytest_collectreport(report=pytest.CollectReport(parent.nodeid, "passed", None, result))
