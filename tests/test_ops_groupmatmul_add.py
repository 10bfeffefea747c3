"""npu_groupmatmul_add_fp32 (--gemm-gradient-accumulation-fusion's grouped weight-gradient accumulation into the
experts' main_grad) and MindSpore's gmm list form (MindSpeed's op-builder proxy: --moe-fb-overlap's experts, their
grouped matmul and weight gradient) against PyTorch autograd of megatron's grouped MLP weight, viewed as
(experts, k, n)."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import OpArgumentError, npu_groupmatmul_add_fp32
from mindspeed_ms.ops.gmm import grouped_matmul_lists

E, K, N = 3, 5, 4
ENDS = [4, 4, 9]  # expert 1 gets no token

# megatron's GroupedMLP: weight1 (hidden, experts * ffn) viewed as (experts, hidden, ffn), one matmul per expert.
TORCH_GROUPED_WEIGHT_GRAD = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
x = torch.tensor(data["x"])
weight = torch.tensor(data["w"], requires_grad=True)
w = weight.view(len(data["ends"]), x.shape[1], -1)
outs, start = [], 0
for g, end in enumerate(data["ends"].tolist()):
    outs.append(x[start:end] @ w[g])
    start = end
out = torch.cat(outs)
(out * torch.tensor(data["dy"])).sum().backward()
np.savez(sys.argv[2], grad=weight.grad.numpy(), out=out.detach().numpy())
"""


def inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((ENDS[-1], K)).astype(np.float32),
            "dy": rng.standard_normal((ENDS[-1], N)).astype(np.float32),
            "w": rng.standard_normal((K, E * N)).astype(np.float32), "ends": np.array(ENDS)}


def test_accumulates_pytorchs_grouped_weight_gradient_into_main_grads_shape(tmp_path: Path) -> None:
    data = inputs(0)
    want = run_reference(TORCH_GROUPED_WEIGHT_GRAD, data, tmp_path)
    start = np.random.default_rng(1).standard_normal((K, E * N)).astype(np.float32)
    main_grad = Tensor(start.copy())  # weight1's (hidden, experts * ffn), the kernel's (experts, hidden, ffn) memory
    for group_list in (ENDS, Tensor(np.array(ENDS, np.int64))):
        returned = npu_groupmatmul_add_fp32(Tensor(data["x"]), Tensor(data["dy"]), group_list, main_grad)
        assert returned is main_grad
    np.testing.assert_allclose(main_grad.asnumpy(), start + 2 * want["grad"], rtol=1e-5, atol=1e-5)
    # the fb-overlap experts: forward with group_type 0 (cumulative ends, then sizes), the weight gradient of
    # inputs.t() and the output gradient with group_type 2
    x, dy, w = Tensor(data["x"]), Tensor(data["dy"]), Tensor(data["w"]).reshape(E, K, N)
    sizes = Tensor(np.diff([0, *ENDS]).astype(np.int64))
    for group_list, kind in ((Tensor(np.array(ENDS, np.int64)), 0), (sizes, 1)):
        out = grouped_matmul_lists([x], [w], [], group_list, 0, kind)
        np.testing.assert_allclose(out[0].asnumpy(), want["out"], rtol=1e-5, atol=1e-5)
    dw = grouped_matmul_lists([x.t()], [dy], [], sizes, 2, 1)[0]
    np.testing.assert_allclose(dw.asnumpy(), want["grad"].reshape(E, K, N), rtol=1e-5, atol=1e-5)


def test_bfloat16_inputs_accumulate_in_float32() -> None:
    data = inputs(2)
    grad = Tensor(np.zeros((E, K, N), np.float32))
    npu_groupmatmul_add_fp32(*(Tensor(data[n]).astype(mindspore.bfloat16) for n in ("x", "dy")), ENDS, grad)
    full = Tensor(np.zeros((E, K, N), np.float32))
    npu_groupmatmul_add_fp32(Tensor(data["x"]), Tensor(data["dy"]), ENDS, full)
    assert grad.dtype == mindspore.float32
    np.testing.assert_allclose(grad.asnumpy(), full.asnumpy(), atol=0.1)


def test_refuses_shapes_and_offsets_that_do_not_fit() -> None:
    data = inputs(3)
    x, dy = Tensor(data["x"]), Tensor(data["dy"])
    with pytest.raises(OpArgumentError, match=r"argument 'grad'.*3 \* 5 \* 4 elements.*got shape \(5, 8\)"):
        npu_groupmatmul_add_fp32(x, dy, ENDS, Tensor(np.zeros((K, 2 * N), np.float32)))
    with pytest.raises(OpArgumentError, match=r"argument 'group_list'.*ending at the token count 9, got \[4, 3, 9\]"):
        npu_groupmatmul_add_fp32(x, dy, [4, 3, 9], Tensor(np.zeros((E, K, N), np.float32)))
    with pytest.raises(OpArgumentError, match=r"argument 'dy'.*expected 9 rows"):
        npu_groupmatmul_add_fp32(x, dy[:5], ENDS, Tensor(np.zeros((E, K, N), np.float32)))
    with pytest.raises(TypeError, match="argument 'grad'"):
        npu_groupmatmul_add_fp32(x, dy, ENDS, Tensor(np.zeros((E, K, N), np.float16)))


def test_gmm_list_form_refuses_what_it_does_not_do() -> None:
    x, dy = Tensor(inputs(4)["x"]), Tensor(inputs(4)["dy"])
    with pytest.raises(OpArgumentError, match="argument 'group_type'.*got 1"):
        grouped_matmul_lists([x.t()], [dy], [], ENDS, 1, 0)
    with pytest.raises(OpArgumentError, match=r"argument 'group_list'.*ends at 9, got \[4, 4, 8\]"):
        grouped_matmul_lists([x.t()], [dy], [], [4, 4, 8], 2, 0)
    with pytest.raises(OpArgumentError, match="argument 'x'.*a list of one tensor"):
        grouped_matmul_lists([x, x], [dy], [], ENDS, 0, 0)
    with pytest.raises(OpArgumentError, match="argument 'bias'.*group_type 0"):
        grouped_matmul_lists([x.t()], [dy], [dy], ENDS, 2, 0)
