"""mindspeed_ms.compat.torch_npu: torch_npu/MindSpeed's fusion-attention signature over mindspeed_ms.ops."""

from __future__ import annotations

import inspect
from typing import Any

import mindspore
import numpy as np
import pytest

from mindspeed_ms.compat.torch_npu import npu_fusion_attention
from mindspeed_ms.ops import OpArgumentError
from mindspeed_ms.ops import npu_fusion_attention as ops_fusion_attention


def _qkv() -> tuple:
    rng = np.random.default_rng(0)
    return tuple(mindspore.Tensor(rng.standard_normal((1, 2, 4, 8)).astype(np.float32)) for _ in range(3))


def test_adapter_gives_the_same_attention_as_the_op() -> None:
    q, k, v = _qkv()
    mask = mindspore.Tensor(np.triu(np.ones((4, 4), dtype=bool), 1))
    expected = ops_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.35, sparse_mode=0)[0]
    got = npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.35, pse_type=1, drop_mask=None,
                               q_start_idx=None, kv_start_idx=None)[0]
    np.testing.assert_allclose(got.asnumpy(), expected.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize(("argument", "value"), [("drop_mask", "mask"), ("q_start_idx", [0]),
                                                 ("kv_start_idx", [0])])
def test_adapter_rejects_what_the_op_cannot_do(argument: str, value: object) -> None:
    q, k, v = _qkv()
    extra: dict[str, Any] = {argument: value}
    with pytest.raises(OpArgumentError, match=argument):
        npu_fusion_attention(q, k, v, 2, "BNSD", **extra)


def test_adapter_rejects_another_pse_type_with_a_pse() -> None:
    q, k, v = _qkv()
    pse = mindspore.Tensor(np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(OpArgumentError, match="pse_type"):
        npu_fusion_attention(q, k, v, 2, "BNSD", pse=pse, pse_type=2)


def test_adapter_accepts_every_keyword_of_torch_npu_and_mindspeed_v2() -> None:
    names = set(inspect.signature(npu_fusion_attention).parameters)
    torch_npu_keywords = {"pse", "padding_mask", "atten_mask", "scale", "keep_prob", "pre_tockens", "next_tockens",
                          "inner_precise", "drop_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen",
                          "sparse_mode", "gen_mask_parallel", "sync", "pse_type", "q_start_idx", "kv_start_idx"}
    mindspeed_v2_keywords = {"pre_tokens", "next_tokens"}
    assert torch_npu_keywords | mindspeed_v2_keywords <= names


def test_npu_matmul_add_fp32_takes_torch_npus_argument_order() -> None:
    """MindSpeed's MindSpore wgrad fusion: ``torch_npu.npu_matmul_add_fp32(grad_output, total_input, main_grad)``."""
    from mindspeed_ms.compat.torch_npu import npu_matmul_add_fp32

    rng = np.random.default_rng(4)
    grad_output = rng.standard_normal((3, 2, 5)).astype(np.float32)  # (s, b, out)
    total_input = rng.standard_normal((3, 2, 4)).astype(np.float32)  # (s, b, in)
    start = rng.standard_normal((5, 4)).astype(np.float32)
    main_grad = mindspore.Tensor(start.copy())
    out = npu_matmul_add_fp32(mindspore.Tensor(grad_output), mindspore.Tensor(total_input), main_grad)
    want = start + grad_output.reshape(6, 5).T @ total_input.reshape(6, 4)
    assert out is main_grad
    np.testing.assert_allclose(main_grad.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_npu_fusion_attention_grad_takes_torch_npus_spellings_and_gives_the_ops_gradients() -> None:
    """Ring-attention context parallelism's backward (MindSpeed's qwen25 layout, CP2) calls it with ``scale_value``,
    ``pre_tockens``/``next_tockens`` and the dropout generator state; the adapter returns the op's four gradients."""
    from mindspeed_ms.compat.torch_npu import npu_fusion_attention_grad
    from mindspeed_ms.ops import npu_fusion_attention_grad as ops_grad

    q, k, v = _qkv()
    mask = mindspore.Tensor(np.triu(np.ones((4, 4), dtype=bool), 1))
    out, smax, ssum = ops_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.35, sparse_mode=3)[:3]
    saved = {"softmax_max": smax, "softmax_sum": ssum, "attention_in": out}
    want = ops_grad(q, k, v, out, 2, "BNSD", atten_mask=mask, scale_value=0.35, sparse_mode=3, pre_tockens=4,
                    next_tockens=0, **saved)
    got = npu_fusion_attention_grad(q, k, v, out, 2, "BNSD", pse=None, padding_mask=None, atten_mask=mask,
                                    scale_value=0.35, pre_tockens=4, next_tockens=0, sparse_mode=3, keep_prob=1.0,
                                    seed=1234, offset=0, numels=0, **saved)
    assert len(got) == 4
    for a, b in zip(got[:3], want[:3]):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    for argument, value in (("drop_mask", q), ("q_start_idx", [0]), ("kv_start_idx", [0])):
        with pytest.raises(OpArgumentError, match=argument):
            npu_fusion_attention_grad(q, k, v, out, 2, "BNSD", **{argument: value}, **saved)
