"""Tests of mindspeed_ms.adaptation.verify: every registered target checked by importing or by reading sources."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _helpers import unique, write_files

from mindspeed_ms.adaptation.verify import check_target, verify_registry
from mindspeed_ms.engine.registry import PatchRegistry


@pytest.fixture()
def verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PatchRegistry, str]:
    mod = unique("verify_target")
    write_files(tmp_path, {
        f"{mod}.py": """
            try:
                import verify_blocked_dependency
            except ImportError:
                verify_blocked_dependency = None

            def compute(x, y, *, scale=1):
                return (x + y) * scale

            def combine(a, b):
                return a + b

            class Layer:
                def forward(self, hidden):
                    return hidden
        """,
        # Stands for msadapter's transformer_engine shim: importable, then failing.
        "verify_blocked_dependency.py": "raise RuntimeError('shim present but unusable')\n",
        f"{mod}_broken.py": "raise RuntimeError('broken at import')\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PatchRegistry("verify")
    with registry.provider("tests"):
        registry.block("verify_blocked_dependency")
        registry.register(f"{mod}.compute", lambda x, y, *, scale=1: 0)
        registry.register(f"{mod}.Layer.forward", lambda self, hidden: hidden)
        registry.register(f"{mod}.Layer.forwrad", lambda self, hidden: hidden)
        registry.register(f"{mod}.compute_fast", lambda x, y: 0, create_dummy=True)
        registry.register(f"{mod}.combine", lambda a: a)
        registry.register(f"{mod}_broken.anything", lambda: None)
        registry.register(f"{mod}.skipped", lambda: None, requires="no-such-distribution-xyz")
    return registry, mod


def test_dynamic_verify_reports_each_target_by_state(verified: tuple[PatchRegistry, str]) -> None:
    registry, mod = verified
    checks = {check.target: check for check in verify_registry(registry)}
    assert checks[f"{mod}.compute"].state == "ok"
    assert checks[f"{mod}.Layer.forward"].state == "ok"
    typo = checks[f"{mod}.Layer.forwrad"]
    assert typo.state == "missing"
    assert "'forward'" in (typo.reason or "")
    assert typo.is_failure
    assert checks[f"{mod}.compute_fast"].state == "stub"
    incompatible = checks[f"{mod}.combine"]
    assert incompatible.state == "incompatible"
    assert "'b'" in (incompatible.reason or "")
    assert checks[f"{mod}_broken.anything"].state == "error"
    assert "broken at import" in (checks[f"{mod}_broken.anything"].reason or "")
    assert checks[f"{mod}.skipped"].state == "skipped"
    assert "verify_blocked_dependency" not in checks  # blocks are not targets
    assert all(check.provider == "tests" for check in checks.values())
    assert sys.modules[mod].verify_blocked_dependency is None  # imported with the block in force


def test_blocks_are_lifted_after_dynamic_verify(verified: tuple[PatchRegistry, str]) -> None:
    registry, _ = verified
    verify_registry(registry)
    with pytest.raises(RuntimeError, match="shim present"):
        __import__("verify_blocked_dependency")


def test_static_verify_imports_nothing(verified: tuple[PatchRegistry, str]) -> None:
    registry, mod = verified
    checks = {check.target: check for check in verify_registry(registry, static=True)}
    assert checks[f"{mod}.compute"].state == "ok"
    assert checks[f"{mod}.Layer.forwrad"].state == "missing"
    assert checks[f"{mod}.Layer.forwrad"].suggestions == ("forward",)
    assert checks[f"{mod}.compute_fast"].state == "stub"
    assert checks[f"{mod}_broken.anything"].state == "missing"
    assert checks[f"{mod}.Layer.forward"].state == "ok"
    combine = checks[f"{mod}.combine"]  # the target's signature read from source, the replacement's from the lambda
    assert combine.state == "incompatible"
    assert "'b'" in (combine.reason or "")
    assert mod not in sys.modules
    assert f"{mod}_broken" not in sys.modules


def test_static_verify_compares_a_lazy_reference_signature_from_source_importing_neither(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, impl = unique("static_sig_target"), unique("static_sig_impl")
    write_files(tmp_path, {
        f"{target}.py": """
            raise RuntimeError("must not be imported")

            def forward(self, hidden, mask=None, *, scale=1.0):
                return hidden
        """,
        f"{impl}.py": """
            raise RuntimeError("must not be imported either")

            def forward_ok(self, hidden, mask=None, *, scale=1.0, extra=0):
                return hidden

            def forward_drops_mask(self, hidden, *, scale=1.0):
                return hidden

            def forward_needs_scale(self, hidden, mask=None, *, scale):
                return hidden

            @some_decorator
            def forward_decorated(self):
                return None
        """,
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PatchRegistry("static-signatures")
    for name in ("forward_ok", "forward_drops_mask", "forward_needs_scale", "forward_decorated"):
        registry.register(f"{target}.forward", f"{impl}:{name}", force_patch=True)
        [check] = verify_registry(registry, static=True)
        if name in ("forward_ok", "forward_decorated"):  # a decorator hides the signature: not judged
            assert check.state == "ok", (name, check)
        elif name == "forward_drops_mask":
            assert check.state == "incompatible", check
            assert "'mask'" in (check.reason or ""), check
        else:
            assert check.state == "incompatible", check
            assert "'scale'" in (check.reason or ""), check
    assert target not in sys.modules
    assert impl not in sys.modules


def test_check_target_of_a_wrap_only_checks_resolution() -> None:
    registry = PatchRegistry("wraps")
    patch = registry.register("json.dumps", lambda fn: fn, kind="wrap")
    assert check_target(patch).state == "ok"
    assert registry.patches() == [patch]


def test_target_whose_module_fails_without_its_blocks_is_an_error(verified: tuple[PatchRegistry, str]) -> None:
    registry, mod = verified
    [patch] = [p for p in registry.patches() if p.target == f"{mod}.compute"]
    check = check_target(patch)  # no blocks in force: the shim's RuntimeError surfaces
    assert check.state == "error"
    assert "shim present but unusable" in (check.reason or "")


def test_one_target_that_crashes_static_resolution_is_that_targets_error(
        verified: tuple[PatchRegistry, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from mindspeed_ms.engine.static import StaticResolver

    registry, mod = verified
    real = StaticResolver.resolve

    def flaky(self: StaticResolver, target: str):
        if target.endswith(".combine"):
            raise KeyError("mindspeed_ms.some_parent")
        return real(self, target)

    monkeypatch.setattr(StaticResolver, "resolve", flaky)
    checks = {check.target: check for check in verify_registry(registry, static=True)}
    crashed = checks[f"{mod}.combine"]
    assert crashed.state == "error"
    assert crashed.is_failure
    assert "KeyError" in crashed.reason
    assert checks[f"{mod}.compute"].state == "ok"
