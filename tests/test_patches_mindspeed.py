"""The built-in ``mindspeed`` provider, against the stand-in MindSpeed package in tests/fakes.

Importing MindSpeed's modules after the provider's patches are applied (or before: patching is
immediate then) yields the MindSpore implementations of :mod:`mindspeed_ms.ops`, including through
the ``coc_ops`` singleton that ``mindspeed.ops.lcal_functional`` creates at import.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _helpers import FAKES, builtin_providers

import mindspeed_ms.ops as ms_ops
from mindspeed_ms import PatchRegistry
from mindspeed_ms.adaptation import Adaptation, Settings
from mindspeed_ms.adaptation.framework import get_args
from mindspeed_ms.compat import torch_npu as npu_compat
from mindspeed_ms.versions import MINDSPEED_REQUIREMENT

#: every other built-in provider disabled, whatever providers are added later
ONLY_MINDSPEED = {"MINDSPEED_MS_DISABLE": ",".join(name for name in builtin_providers() if name != "mindspeed")}

#: module -> attribute -> the implementation it must be after the patches
EXPECTED: dict[str, dict[str, Any]] = {
    "mindspeed.ops.npu_matmul_add": {"npu_matmul_add_fp32": ms_ops.npu_matmul_add_fp32},
    "mindspeed.ops.gmm": {"npu_gmm": ms_ops.npu_gmm, "npu_gmm_v2": ms_ops.npu_gmm_v2},
    "mindspeed.ops.npu_rotary_position_embedding": {
        "npu_rotary_position_embedding": ms_ops.npu_rotary_position_embedding},
    "mindspeed.ops.npu_moe_token_permute": {"npu_moe_token_permute": ms_ops.npu_moe_token_permute},
    "mindspeed.ops.npu_moe_token_unpermute": {"npu_moe_token_unpermute": ms_ops.npu_moe_token_unpermute},
    "mindspeed.ops.fusion_attention_v2": {"npu_fusion_attention": npu_compat.npu_fusion_attention},
    "mindspeed.ops.npu_ring_attention_update": {"npu_ring_attention_update": ms_ops.npu_ring_attention_update},
}
COC_METHODS = ("matmul_all_reduce", "all_gather_matmul", "all_gather_matmul_v2", "matmul_reduce_scatter",
               "pure_matmul")


def _forget_mindspeed() -> None:
    for name in [name for name in sys.modules if name == "mindspeed" or name.startswith("mindspeed.")]:
        del sys.modules[name]


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Put the stand-in MindSpeed (and its dist-info) on sys.path; forget its modules afterwards."""
    _forget_mindspeed()
    monkeypatch.syspath_prepend(str(FAKES))
    importlib.invalidate_caches()
    yield
    _forget_mindspeed()


@pytest.fixture
def registry(stand_in: None) -> Iterator[PatchRegistry]:
    """A fresh registry, reverted before the stand-in's modules are forgotten."""
    fresh = PatchRegistry(name="test-mindspeed")
    yield fresh
    fresh.revert()


def _register(registry: PatchRegistry, *argv: str) -> None:
    adaptation = Adaptation(settings=Settings.from_environ(ONLY_MINDSPEED), argv=list(argv), framework="mindspore")
    run = adaptation.run_providers(registry, get_args(list(argv)))
    assert run.registered == ("mindspeed",), run


def test_importing_mindspeed_ops_after_apply_yields_mindspore_implementations(registry: PatchRegistry) -> None:
    _register(registry)
    registry.apply()
    for module_name, attributes in EXPECTED.items():
        module = importlib.import_module(module_name)
        for attribute, implementation in attributes.items():
            assert getattr(module, attribute) is implementation, f"{module_name}.{attribute}"


def test_every_mindspeed_patch_applies_with_requires_purpose_and_a_compatible_signature(
        registry: PatchRegistry) -> None:
    _register(registry, "--use-ascend-coc")
    registry.apply()
    for module_name in [*EXPECTED, "mindspeed.ops.lcal_functional"]:
        importlib.import_module(module_name)
    statuses = registry.status()
    # on the CPU backend, MindSpeed's MindSpore grouped matmul too (its module imports torch: not imported here)
    cpu = {"mindspeed.mindspore.ops.gmm.npu_gmm", "mindspeed.mindspore.ops.gmm.npu_gmm_v2",
           "mindspeed.mindspore.ops.gmm._GmmProxy.npu_gmm", "mindspeed.mindspore.ops.gmm._GmmProxy2.npu_gmm",
           "mindspeed.mindspore.ops.npu_ring_attention_update._RingAttentionProxy.npu_ring_attention_update"}
    assert len(statuses) == sum(map(len, EXPECTED.values())) + len(COC_METHODS) + len(cpu)
    for status in statuses:
        assert status.state == ("pending-import" if status.target in cpu else "applied"), (status.target,
                                                                                            status.reason)
        assert status.provider == "mindspeed"
        assert status.requires == (MINDSPEED_REQUIREMENT,)
        assert status.purpose
        assert status.warnings == (), (status.target, status.warnings)


def test_coc_methods_stay_unpatched_without_use_ascend_coc(registry: PatchRegistry) -> None:
    _register(registry)
    registry.apply()
    lcal = importlib.import_module("mindspeed.ops.lcal_functional")
    for method in COC_METHODS:
        assert getattr(lcal.CoCOperations, method).__module__ == "mindspeed.ops.lcal_functional"


def test_coc_ops_singleton_created_at_import_uses_the_mindspore_methods(registry: PatchRegistry) -> None:
    lcal = importlib.import_module("mindspeed.ops.lcal_functional")  # coc_ops exists before the patches
    singleton = lcal.coc_ops
    _register(registry, "--use-ascend-coc")
    registry.apply()
    assert lcal.coc_ops is singleton
    for method in COC_METHODS:
        assert getattr(singleton, method).__func__ is getattr(ms_ops, method), method


def test_coc_pure_matmul_through_the_singleton_computes_with_mindspore(registry: PatchRegistry) -> None:
    import mindspore

    _register(registry, "--use-ascend-coc")
    registry.apply()
    from mindspeed.ops.lcal_functional import coc_ops  # type: ignore[import-not-found]

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    out = mindspore.Tensor(np.zeros((3, 5), np.float32))
    result: Any = coc_ops.pure_matmul(mindspore.Tensor(x), mindspore.Tensor(w), out)
    np.testing.assert_allclose(result.asnumpy(), x @ w, rtol=1e-5, atol=1e-5)


def test_patched_npu_matmul_add_fp32_accumulates_into_grad(registry: PatchRegistry) -> None:
    import mindspore

    _register(registry)
    registry.apply()
    from mindspeed.ops.npu_matmul_add import npu_matmul_add_fp32  # type: ignore[import-not-found]

    rng = np.random.default_rng(1)
    total_input = rng.standard_normal((6, 4)).astype(np.float32)
    grad_output = rng.standard_normal((6, 3)).astype(np.float32)
    grad = mindspore.Tensor(np.ones((3, 4), np.float32))
    npu_matmul_add_fp32(mindspore.Tensor(total_input), mindspore.Tensor(grad_output), grad)
    np.testing.assert_allclose(grad.asnumpy(), 1.0 + grad_output.T @ total_input, rtol=1e-5, atol=1e-5)


def test_revert_puts_back_mindspeeds_own_functions(registry: PatchRegistry) -> None:
    _register(registry, "--use-ascend-coc")
    registry.apply()
    matmul_add = importlib.import_module("mindspeed.ops.npu_matmul_add")
    lcal = importlib.import_module("mindspeed.ops.lcal_functional")
    assert matmul_add.npu_matmul_add_fp32 is ms_ops.npu_matmul_add_fp32
    registry.revert()
    assert matmul_add.npu_matmul_add_fp32.__module__ == "mindspeed.ops.npu_matmul_add"
    assert lcal.CoCOperations.pure_matmul.__module__ == "mindspeed.ops.lcal_functional"
    with pytest.raises(NotImplementedError, match="torch_npu C\\+\\+ extension"):
        lcal.coc_ops.pure_matmul(None, None, None)


def test_mindspeed_patches_are_skipped_when_mindspeed_is_not_installed() -> None:
    _forget_mindspeed()
    registry = PatchRegistry(name="no-mindspeed")
    _register(registry)
    try:
        registry.apply()
        states = {status.state for status in registry.status()}
        reasons = {status.reason or "" for status in registry.status()}
    finally:
        registry.revert()
    assert states == {"skipped"}
    assert all("mindspeed" in reason for reason in reasons), reasons
