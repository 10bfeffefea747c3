"""mindspeed_ms.compat.host_norm: ``torch.norm`` of a large float32 tensor is never further from the exact norm
than PyTorch's own ``torch.norm``, and every other call (and every non-finite case) gives what PyTorch gives.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied over
the same gradient-like arrays (normal with outliers, log-uniform magnitudes over 16 decades, a DDP-bucket size
with a tail that is not a whole row, exactly one row multiple), the cases the host path leaves to MSAdapter
(a transposed view, ``p=1``, ``dim``, a tensor requiring a gradient, with its gradient), the non-finite cases,
and megatron-core's own ``local_multi_tensor_l2_norm`` (what ``get_grad_norm_fp32`` calls) with the clip
coefficient ``clip_grad_by_total_norm_fp32`` derives from it. The exact norm is ``math.fsum`` of the float64
squares (each exact) here.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import ROOT, reference_python, run_python, subprocess_env

_SCRIPT = '''
import sys
import numpy as np
{prelude}
import torch
from megatron.core.utils import local_multi_tensor_l2_norm

given = np.load(sys.argv[1])
out = {{}}
for name in ("normal", "log_uniform", "bucket", "rows", "positive"):
    tensor = torch.tensor(given[name])
    out[name] = np.float32(torch.norm(tensor).item())
    out[name + "_2"] = np.float32(torch.norm(tensor, 2).item())
    out[name + "_fro"] = np.float32(torch.norm(tensor, "fro").item())
    before = COUNT[0]
    out[name + "_method"] = np.float32(tensor.norm(p=2).item())  # every parameter by keyword (megatron's check_grads)
    out[name + "_keywords"] = np.float32(torch.norm(tensor, p="fro", dim=None, keepdim=False, dtype=None).item())
    out[name + "_host_calls"] = np.array(COUNT[0] - before)
matrix = torch.tensor(given["normal"][:300000].reshape(600, 500))
out["keepdim"] = torch.norm(matrix, p=2, dim=None, keepdim=True).numpy()  # left to MSAdapter
out["p_twice"] = np.array(0)
try:
    torch.norm(matrix, 2, p=2)
except TypeError:
    out["p_twice"] = np.array(1)
out["matrix"] = np.float32(torch.norm(matrix).item())
out["transposed"] = np.float32(torch.norm(matrix.t()).item())
out["p1"] = np.float32(torch.norm(matrix, 1).item())
out["dim"] = torch.norm(matrix, dim=1).numpy()
leaf = matrix.clone().requires_grad_()
value = torch.norm(leaf)
value.backward()
out["with_grad"], out["grad"] = np.float32(value.item()), leaf.grad.numpy()
special = given["normal"][:100000].copy()
for name, position, element in (("nan", 7, np.nan), ("inf", 99999, np.inf), ("neg_inf", 3, -np.inf)):
    values = special.copy()
    values[position] = element
    out[name] = np.float32(torch.norm(torch.tensor(values)).item())
out["overflow"] = np.float32(torch.norm(torch.full((70000,), 1e20)).item())
out["zeros"] = np.float32(torch.norm(torch.zeros(70000)).item())
bucket, small = torch.tensor(given["bucket"]), torch.tensor(given["normal"][:1000])
if CALL_MEGATRON:
    norm, _ = local_multi_tensor_l2_norm(2048 * 32, None, [[bucket, small]], False)
else:  # its arithmetic before the copy to device 'cuda' (PyTorch for the CPU has none)
    norm = torch.norm(torch.tensor([torch.norm(bucket), torch.norm(small)]))
out["megatron"] = np.float32(norm.item())
for size in (1, 2, 3, 7, 100, 5000):  # small tensors (megatron's norm of its per-bucket norms: two)
    out["small" + str(size)] = np.float32(torch.norm(torch.tensor(given["log_uniform"][:size])).item())
out["host_path"] = np.array(torch.norm.__code__.co_filename.endswith("host_norm.py"))
np.savez(sys.argv[2], **out)
'''


#: ours: the host path's sums of squares counted (the reference counts none)
_COUNTING = """
from mindspeed_ms.compat import host_arithmetic
COUNT = [0]
_sum_of_squares = host_arithmetic.sum_of_squares


def _counted(values):
    COUNT[0] += 1
    return _sum_of_squares(values)


host_arithmetic.sum_of_squares = _counted
"""


def _run(python: str, prelude: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude)), str(folder / "inputs.npz"),
               str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def _exact(*arrays: np.ndarray) -> float:
    return math.sqrt(math.fsum(float(v) for a in arrays for v in (a.astype(np.float64) ** 2)))


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(24)
    normal = (rng.standard_normal(1_000_003) * 1e-3).astype(np.float32)
    normal[:500] *= 300.0  # a few large gradients, as embedding rows give
    return {
        "normal": normal,
        "log_uniform": (10.0 ** rng.uniform(-12, 4, 400_000) * rng.choice([-1, 1], 400_000)).astype(np.float32),
        "bucket": (rng.standard_normal(2_100_000) * 2e-2).astype(np.float32),
        "rows": rng.standard_normal(128 * 1024).astype(np.float32),
        "positive": rng.uniform(0.5, 1.0, 300_001).astype(np.float32),
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the inputs, PyTorch's results, ours)."""
    folder = tmp_path_factory.mktemp("host_norm")
    inputs = _inputs()
    np.savez(folder / "inputs.npz", **inputs)
    expected = _run(reference_python(), "CALL_MEGATRON = False\nCOUNT = [0]", folder, [])
    ours = "CALL_MEGATRON = True\nimport mindspeed_ms.adaptor"
    got = _run(sys.executable, ours + _COUNTING, folder, ["--ai-framework", "mindspore"])
    return inputs, expected, got


def test_host_norm_is_at_least_as_close_to_the_exact_norm_as_pytorchs(results: tuple) -> None:
    inputs, expected, got = results
    assert got["host_path"]
    assert sorted(got) == sorted(expected)
    for name, values in inputs.items():
        exact = _exact(values)
        theirs = abs(float(expected[name]) - exact)
        for key in (name, name + "_2", name + "_fro", name + "_method", name + "_keywords"):
            ours = abs(float(got[key]) - exact)
            assert ours <= theirs, (key, ours / exact, theirs / exact)
            # and the float32 nearest the exact norm (half a unit in the last place)
            assert ours <= np.spacing(np.float32(exact)) / 2, (key, ours / exact)
        assert got[name + "_host_calls"] == 2, name  # the keyword forms took the host path
    exact = _exact(inputs["normal"][:300000])
    assert abs(float(got["matrix"]) - exact) <= abs(float(expected["matrix"]) - exact)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 100, 5000])
def test_small_tensors_norms_are_at_least_as_close_to_exact_as_pytorchs(results: tuple, size: int) -> None:
    """Any size takes the host path (megatron's norm of its two per-bucket norms at the tiny size, every step)."""
    inputs, expected, got = results
    exact = _exact(inputs["log_uniform"][:size])
    ours, theirs = abs(float(got[f"small{size}"]) - exact), abs(float(expected[f"small{size}"]) - exact)
    assert ours <= theirs, (ours / exact, theirs / exact)
    assert ours <= np.spacing(np.float32(exact)) / 2, ours / exact


def test_calls_left_to_msadapter_and_non_finite_norms_are_pytorchs(results: tuple) -> None:
    _, expected, got = results
    # float32 reductions of MindSpore's own, within float32 summation rounding of PyTorch's
    for key in ("transposed", "p1", "dim", "with_grad", "grad", "zeros", "keepdim"):
        np.testing.assert_allclose(got[key], expected[key], rtol=2e-4, atol=0, err_msg=key)
    assert got["keepdim"].shape == expected["keepdim"].shape
    assert got["p_twice"] == expected["p_twice"] == 1
    for key in ("nan", "inf", "neg_inf", "overflow"):
        assert np.array_equal(got[key], expected[key], equal_nan=True), (key, got[key], expected[key])


def test_megatrons_grad_norm_and_clip_coefficient_are_as_close_to_exact_as_pytorchs(results: tuple) -> None:
    inputs, expected, got = results
    # megatron takes the norm of the per-tensor norms (each rounded to float32): one more float32 rounding
    exact = _exact(inputs["bucket"], inputs["normal"][:1000])
    ours, theirs = abs(float(got["megatron"]) - exact), abs(float(expected["megatron"]) - exact)
    assert ours <= max(theirs, float(np.spacing(np.float32(exact)))), (ours / exact, theirs / exact)
    # clip_grad_by_total_norm_fp32's coefficient max_norm / (norm + 1e-6): the same decision (clip or not) for a
    # max_norm either side of the norm, and at least as close to the coefficient of the exact norm
    for max_norm in (0.5 * exact, 2.0 * exact, 1.0):
        coefficient = [max_norm / (float(result["megatron"]) + 1.0e-6) for result in (got, expected)]
        assert (coefficient[0] < 1.0) == (coefficient[1] < 1.0)
        best = max_norm / (exact + 1.0e-6)
        assert abs(coefficient[0] - best) <= max(abs(coefficient[1] - best), 2e-7 * best), (coefficient, best)


_L2_SCRIPT = '''
import sys
import numpy as np
import mindspeed_ms.adaptor
import torch
import megatron.core.optimizer.clip_grads as clip_grads
from megatron.core.utils import local_multi_tensor_l2_norm as local

rng = np.random.default_rng(7)
def tensor(size, scale=1e-2):
    return torch.tensor((rng.standard_normal(size) * scale).astype(np.float32))
bucket, small, one = tensor(70001), tensor(33, 3.0), tensor(1)
special = tensor(1000)
special[5] = float("nan")
infinite = tensor(1000)
infinite[9] = float("inf")
leaf = tensor(64).requires_grad_()
cases = {
    "one_bucket": [[bucket]], "three": [[bucket, small, one]], "two_lists": [[bucket, one], [small, one]],
    "nan": [[bucket, special]], "inf": [[infinite, small]], "overflow": [[torch.full((70000,), 1e20)]],
    "zeros": [[torch.zeros(5000), torch.zeros(3)]],
    "transposed": [[bucket, tensor(600).reshape(20, 30).t()]], "requires_grad": [[small, leaf]],
}
out = {"wrapped": np.array(clip_grads.l2_norm_impl is not local
                           and getattr(clip_grads.l2_norm_impl, "__wrapped__", None) is local)}
for name, lists in cases.items():
    ours, none = clip_grads.l2_norm_impl(2048 * 32, None, lists, False)
    theirs, _ = local(2048 * 32, None, lists, False)
    assert none is None and tuple(ours.shape) == tuple(theirs.shape) == (1,), name
    assert ours.dtype == theirs.dtype == torch.float32, name
    out[name] = np.stack([ours.numpy(), theirs.numpy()])
raised = []
for function in (clip_grads.l2_norm_impl, local):  # a ragged list: torch.tensor of the norms raises on both paths
    try:
        function(2048 * 32, None, [[bucket], [small, one]], False)
    except Exception as error:
        raised.append(type(error).__name__)
out["ragged"] = np.array(raised)
np.savez(sys.argv[1], **out)
'''


def test_megatrons_local_l2_norm_gives_the_bits_of_its_own_path(tmp_path: Path) -> None:
    """``clip_grads.l2_norm_impl`` (megatron's ``local_multi_tensor_l2_norm`` without Apex), wrapped: every list of
    tensors (one bucket, several, two lists, NaN, inf, overflow, zeros, and the ones it leaves to megatron: a
    transposed view, a tensor requiring a gradient) gives megatron's own result, bit for bit."""
    taken = tmp_path / "l2.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(sys.executable, "-c", textwrap.dedent(_L2_SCRIPT), str(taken), "--ai-framework", "mindspore", env=env)
    with np.load(taken) as saved:
        got = {name: saved[name] for name in saved.files}
    assert got.pop("wrapped")
    ragged = got.pop("ragged")
    assert len(ragged) == 2, ragged
    assert ragged[0] == ragged[1], ragged
    assert len(got) == 9
    for name, (ours, theirs) in got.items():
        assert ours.tobytes() == theirs.tobytes(), (name, ours, theirs)
    assert np.isnan(got["nan"][0][0])
    assert np.isinf(got["inf"][0][0])
    assert np.isinf(got["overflow"][0][0])
    assert got["zeros"][0][0] == 0.0
    assert got["three"][0][0] > got["one_bucket"][0][0] > 0
