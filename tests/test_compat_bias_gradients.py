"""mindspeed_ms.compat.function_grads (every Function's gradients summed to the input's shape): megatron-core's
fused bias-GeLU (GeLUFunction, the real one) on MindSpore, its input and bias gradients against the same Function on
real PyTorch."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tests._helpers import result_line, run_python, run_reference, subprocess_env

#: megatron's GeLUFunction over [seq 6, batch 2, ffn 8] + a [8] bias, backpropagated with fixed weights; twice (the
#: first backward of a training run and a second one), the second pass's gradients compared
SCRIPT = """
import sys
import numpy as np
{prelude}
import torch
from megatron.core.fusions.fused_bias_gelu import bias_gelu_impl
given = np.load(sys.argv[1])
x = torch.tensor(given["x"]).requires_grad_(True)
bias = torch.tensor(given["bias"]).requires_grad_(True)
for _ in range(2):  # the gradients set to None between passes (see scripts/repro_exit_heap_corruption.py)
    x.grad = bias.grad = None
    (bias_gelu_impl(x, bias) * torch.tensor(given["weights"])).sum().backward()
{save}
"""


def test_fused_bias_gelu_gradients_are_pytorchs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((6, 2, 8)).astype(np.float32),
              "bias": rng.standard_normal(8).astype(np.float32),
              "weights": rng.standard_normal((6, 2, 8)).astype(np.float32)}
    reference = run_reference(SCRIPT.format(prelude="", save='np.savez(sys.argv[2], x=x.grad.numpy(), '
                                                             'bias=bias.grad.numpy())'), inputs, tmp_path)
    np.savez(tmp_path / "ours.npz", **inputs)
    ours = SCRIPT.format(prelude="import mindspeed_ms.adaptor",
                         save='import json; print("RESULT " + json.dumps({"x": x.grad.numpy().tolist(), '
                              '"bias": bias.grad.numpy().tolist()}))')
    out = run_python(sys.executable, "-c", ours, str(tmp_path / "ours.npz"),
                     env=subprocess_env(MINDSPEED_AI_FRAMEWORK="mindspore"))
    result = result_line(out)
    assert np.asarray(result["bias"]).shape == (8,)
    np.testing.assert_allclose(result["bias"], reference["bias"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result["x"], reference["x"], rtol=1e-5, atol=1e-6)
