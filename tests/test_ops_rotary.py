"""npu_rotary_position_embedding: both modes, three layouts, gradients, dtypes, argument errors."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import npu_rotary_position_embedding


def rotate(x: np.ndarray, mode: int) -> np.ndarray:
    if mode == 0:
        half = x.shape[-1] // 2
        return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    out = np.empty_like(x)
    out[..., 0::2] = -x[..., 1::2]
    out[..., 1::2] = x[..., 0::2]
    return out


def angles(seq: int, dim: int, mode: int) -> tuple[np.ndarray, np.ndarray]:
    freqs = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    theta = np.outer(np.arange(seq), freqs)
    full = np.concatenate([theta, theta], -1) if mode == 0 else np.repeat(theta, 2, axis=-1)
    return np.cos(full).astype(np.float32), np.sin(full).astype(np.float32)


LAYOUTS = {  # x shape and the broadcast shape of cos/sin, for b=2, s=5, n=3, d=8
    "BSND": ((2, 5, 3, 8), (1, 5, 1, 8)),
    "SBND": ((5, 2, 3, 8), (5, 1, 1, 8)),
    "BNSD": ((2, 3, 5, 8), (1, 1, 5, 8)),
}


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_rotary_float32_matches_numpy_in_every_layout_and_mode(layout: str, mode: int) -> None:
    xshape, cshape = LAYOUTS[layout]
    x = np.random.default_rng(0).standard_normal(xshape).astype(np.float32)
    cos, sin = (a.reshape(cshape) for a in angles(5, 8, mode))
    y = npu_rotary_position_embedding(Tensor(x), Tensor(cos), Tensor(sin), mode)
    ref = x.astype(np.float64) * cos + rotate(x.astype(np.float64), mode) * sin
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_rotary_keeps_the_norm_of_each_rotated_pair() -> None:
    x = np.random.default_rng(1).standard_normal((1, 5, 1, 8)).astype(np.float32)
    cos, sin = (a.reshape(1, 5, 1, 8) for a in angles(5, 8, 1))
    y = npu_rotary_position_embedding(Tensor(x), Tensor(cos), Tensor(sin), 1).asnumpy()
    pair_norm = lambda a: np.hypot(a[..., 0::2], a[..., 1::2])  # noqa: E731 - a one-line local helper
    np.testing.assert_allclose(pair_norm(y), pair_norm(x), rtol=1e-5)


@pytest.mark.parametrize(("dtype", "tol"), [(mindspore.float16, 4e-3), (mindspore.bfloat16, 3e-2)])
def test_rotary_half_inputs_keep_their_dtype_within_rounding(dtype: mindspore.dtype, tol: float) -> None:
    # Tolerance: inputs and output rounded to the half type (|values| < 4).
    x = Tensor(np.random.default_rng(2).standard_normal((2, 5, 3, 8)).astype(np.float32)).astype(dtype)
    cos, sin = (Tensor(a.reshape(1, 5, 1, 8)).astype(dtype) for a in angles(5, 8, 0))
    y = npu_rotary_position_embedding(x, cos, sin)
    assert y.dtype == dtype
    f = lambda t: t.astype(mindspore.float32).asnumpy().astype(np.float64)  # noqa: E731
    ref = f(x) * f(cos) + rotate(f(x), 0) * f(sin)
    np.testing.assert_allclose(f(y), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", [0, 1])
def test_rotary_gradient_is_the_transposed_rotation(mode: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 2, 8)).astype(np.float32)
    w = rng.standard_normal((1, 5, 2, 8)).astype(np.float32)
    cos, sin = (a.reshape(1, 5, 1, 8) for a in angles(5, 8, mode))
    dx = mindspore.grad(lambda t: (npu_rotary_position_embedding(t, Tensor(cos), Tensor(sin), mode) * Tensor(w)).sum())(
        Tensor(x)
    )
    # y = x*cos + R x * sin with R orthogonal and R^T = -R, so dL/dx = w*cos - R(w*sin).
    ref = w * cos - rotate(w * sin, mode)
    np.testing.assert_allclose(dx.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_rotary_rejects_an_unknown_mode_and_non_broadcastable_cos() -> None:
    x = Tensor(np.ones((2, 5, 3, 8), np.float32))
    c = Tensor(np.ones((1, 5, 1, 8), np.float32))
    with pytest.raises(ValueError, match="npu_rotary_position_embedding: argument 'mode'.*got 2"):
        npu_rotary_position_embedding(x, c, c, 2)
    bad = Tensor(np.ones((1, 4, 1, 8), np.float32))
    with pytest.raises(ValueError, match=r"argument 'cos'.*broadcastable to x \(2, 5, 3, 8\)"):
        npu_rotary_position_embedding(x, bad, bad)
    with pytest.raises(ValueError, match="argument 'x'.*4-D"):
        npu_rotary_position_embedding(Tensor(np.ones((5, 8), np.float32)), c, c)


def test_rotary_rejects_sin_of_another_shape_than_cos() -> None:
    x = Tensor(np.ones((2, 5, 3, 8), np.float32))
    cos = Tensor(np.ones((1, 5, 1, 8), np.float32))
    sin = Tensor(np.ones((5, 1, 1, 8), np.float32))  # broadcastable to x too, but not cos's shape
    with pytest.raises(ValueError, match=r"argument 'sin'.*shape of cos \(1, 5, 1, 8\), got \(5, 1, 1, 8\)"):
        npu_rotary_position_embedding(x, cos, sin)


#: MindSpeed-LLM's unfused RoPE (``apply_rotary_pos_emb_bshd`` without ``--use-fused-rotary-pos-emb``; megatron's
#: ``_rotate_half``), in real PyTorch: what the fused op replaces
TORCH_ROPE = """
import sys
import numpy as np
import torch

def rotate_half(x, interleaved):
    if not interleaved:
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).view(x.shape)

data = np.load(sys.argv[1])
out = {}
for mode in (0, 1):
    t = torch.tensor(data["x"], requires_grad=True)
    cos, sin = torch.tensor(data[f"cos{mode}"]), torch.tensor(data[f"sin{mode}"])
    y = t * cos + rotate_half(t, mode == 1) * sin
    (y * torch.tensor(data["w"])).sum().backward()
    out[f"y{mode}"], out[f"dx{mode}"] = y.detach().numpy(), t.grad.numpy()
np.savez(sys.argv[2], **out)
"""


def test_rotary_and_its_gradients_match_the_unfused_rope_in_pytorch(tmp_path: Path) -> None:
    """--use-fused-rotary-pos-emb (MindSpeed-LLM's mcore path: npu_rotary_position_embedding; its legacy path:
    torch_npu.npu_rotary_mul) against what the script computes without it, on real PyTorch, forward and gradient."""
    from mindspeed_ms.compat.torch_npu import npu_rotary_mul

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 2, 3, 8)).astype(np.float32)  # SBND, as megatron's attention holds it
    w = rng.standard_normal(x.shape).astype(np.float32)
    inputs = {"x": x, "w": w}
    for mode in (0, 1):
        cos, sin = angles(6, 8, mode)
        inputs[f"cos{mode}"], inputs[f"sin{mode}"] = cos[:, None, None, :], sin[:, None, None, :]
    want = run_reference(TORCH_ROPE, inputs, tmp_path)
    for mode, fused in ((0, None), (1, None), (0, "half"), (1, "interleave")):
        cos, sin = Tensor(inputs[f"cos{mode}"]), Tensor(inputs[f"sin{mode}"])

        def rope(t: Tensor, mode: int = mode, fused: str | None = fused, cos: Tensor = cos,
                 sin: Tensor = sin) -> Tensor:
            if fused is None:
                return npu_rotary_position_embedding(t, cos, sin, mode)
            return npu_rotary_mul(t, cos, sin, fused)

        y = rope(Tensor(x))
        dx = mindspore.grad(lambda t, rope=rope: (rope(t) * Tensor(w)).sum())(Tensor(x))
        np.testing.assert_allclose(y.asnumpy(), want[f"y{mode}"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dx.asnumpy(), want[f"dx{mode}"], rtol=1e-5, atol=1e-6)


def test_npu_rotary_mul_rejects_an_unknown_rotary_mode() -> None:
    from mindspeed_ms.compat.torch_npu import npu_rotary_mul
    from mindspeed_ms.ops import OpArgumentError

    x = Tensor(np.ones((2, 1, 1, 4), np.float32))
    with pytest.raises(OpArgumentError, match="rotary_mode"):
        npu_rotary_mul(x, x, x, "sideways")
