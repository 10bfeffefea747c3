"""mindspeed_ms.compat.megatron_core: the vocab-parallel cross entropy's forward (``calculate_predicted_logits`` in
fewer kernels) and its backward's operands (``prepare_gradient_calculation_operands`` on the host) compute what
megatron's own code computes under PyTorch: the five results and the four operands, the caller's
logits overwritten in place (the returned ``exp_logits`` is that tensor), and the whole ``vocab_parallel_cross_entropy``
(loss and logits gradient) of the example's shapes; targets inside and outside a tp=2 partition, 1-D and 2-D targets,
float16 logits and int32 targets.
What is picked and masked is PyTorch's bit for bit; float32 logits are exponentiated and summed on the host
(mindspeed_ms.compat.host_cross_entropy: NumPy's exp within 2 ulps of PyTorch's, the sums within float32 rounding),
float16 logits by MindSpore's kernels: within the error of MindSpore's exp of PyTorch's, and bit for bit megatron's
own function on MindSpore (a second copy of megatron's module).

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
from _helpers import ROOT, reference_python, run_python, subprocess_env

_SCRIPT = '''
import importlib.util
import sys
import numpy as np
{prelude}
import torch
import megatron.core.tensor_parallel.cross_entropy as cross_entropy

given = np.load(sys.argv[1])
out = {{}}
# megatron's own module once more, as the file has it (the adaptor patches the imported one's class)
spec = importlib.util.spec_from_file_location("megatron.core.tensor_parallel.cross_entropy_as_shipped",
                                              cross_entropy.__file__)
shipped = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shipped)
implementations = {{"patched": cross_entropy.VocabParallelCrossEntropy, "shipped": shipped.VocabParallelCrossEntropy}}

def predicted(name, logits, target, partition):
    for kind, implementation in implementations.items():
        tensor = torch.tensor(logits)
        logits_max = torch.max(tensor, dim=-1)[0]
        results = implementation.calculate_predicted_logits(tensor, torch.tensor(target), logits_max, *partition)
        for key, value in zip(("target_mask", "masked_target_1d", "predicted_logits", "sum_exp_logits",
                               "exp_logits"), results):
            out[f"{{kind}}.{{name}}.{{key}}"] = value.numpy()
        out[f"{{kind}}.{{name}}.logits_after"] = tensor.numpy()  # shifted and exponentiated in place
        out[f"{{kind}}.{{name}}.exp_logits_is_logits"] = np.array(results[4] is tensor)

logits, target = given["logits"], given["target"]
predicted("whole_vocabulary", logits, target, (0, 128))
predicted("partition", logits[:, :, 64:].copy(), target, (64, 128))  # tp=2's second rank
predicted("tokens_1d", logits.reshape(-1, 128)[:16].copy(), target.reshape(-1)[:16].copy(), (0, 128))
predicted("large", given["large"], target, (0, 128))
predicted("half", logits.astype(np.float16), target.astype(np.int32), (64, 128))  # MindSpore's kernels pick these

def operands(name, softmax, target_mask):
    for kind, implementation in implementations.items():
        tensor = torch.tensor(softmax)
        grad_2d, arange_1d, update, grad_input = implementation.prepare_gradient_calculation_operands(
            tensor, torch.tensor(target_mask))
        out[f"{{kind}}.{{name}}.grad_2d"] = grad_2d.numpy()
        out[f"{{kind}}.{{name}}.arange_1d"] = arange_1d.numpy()
        out[f"{{kind}}.{{name}}.softmax_update"] = update.numpy()
        out[f"{{kind}}.{{name}}.grad_input_is_softmax"] = np.array(grad_input is tensor)

outside = (target < 64) | (target >= 128)
operands("operands_partition", logits[:, :, 64:].copy(), outside)
operands("operands_none_masked", logits, np.zeros_like(outside))
operands("operands_1d", logits.reshape(-1, 128)[:16].copy(), outside.reshape(-1)[:16].copy())

x = torch.tensor(logits, requires_grad=True)
loss = cross_entropy.vocab_parallel_cross_entropy(x * 1.0, torch.tensor(target))
(loss * torch.tensor(given["g"])).sum().backward()
out["patched.end_to_end.loss"] = loss.detach().numpy()
out["patched.end_to_end.grad"] = x.grad.numpy()
out["module"] = np.array(cross_entropy.VocabParallelCrossEntropy.calculate_predicted_logits.__module__)
np.savez(sys.argv[2], **out)
'''

_REFERENCE_PRELUDE = '''
import torch
import megatron.core.tensor_parallel.cross_entropy as cross_entropy
# one tensor-parallel rank without a process group: the all-reduces over it are no-ops
cross_entropy.get_tensor_model_parallel_group = lambda: None
cross_entropy.get_tensor_model_parallel_rank = lambda: 0
cross_entropy.get_tensor_model_parallel_world_size = lambda: 1
torch.distributed.all_reduce = lambda *args, **kwargs: None
'''

_PRELUDE = '''
import mindspeed_ms.adaptor
''' + _REFERENCE_PRELUDE


def _run(python: str, prelude: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude)), str(folder / "inputs.npz"),
               str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_cross_entropy_forward_matches_megatron_under_pytorch_bit_for_bit(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    large = (rng.standard_normal((32, 4, 128)) * 3).astype(np.float32)
    large[0, 0, :] = 1e30
    large[1, 0, 5] = -1e30
    np.savez(tmp_path / "inputs.npz", logits=(rng.standard_normal((32, 4, 128)) * 3).astype(np.float32),
             target=rng.integers(0, 128, (32, 4)), large=large, g=(rng.random((32, 4)) / 128).astype(np.float32))
    reference = _run(reference_python(), _REFERENCE_PRELUDE, tmp_path, [])
    ours = _run(sys.executable, _PRELUDE, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(ours) == sorted(reference)
    assert str(ours.pop("module")) == "mindspeed_ms.compat.megatron_core"  # the replacement is what ran
    assert str(reference.pop("module")) == "megatron.core.tensor_parallel.cross_entropy"
    exact = ("target_mask", "masked_target_1d", "predicted_logits", "exp_logits_is_logits", "grad_2d", "arange_1d",
             "softmax_update", "grad_input_is_softmax")
    for key, value in reference.items():
        assert ours[key].shape == value.shape, key
        assert ours[key].dtype == value.dtype, key
        if key.endswith(exact):  # picked and masked, no arithmetic: PyTorch's bits
            assert np.array_equal(ours[key], value), key
        elif ".half." in key or key.startswith("shipped."):  # MindSpore's exp kernel, not PyTorch's, and its sum
            rtol = 2e-3 if ".half." in key else 1e-5  # float16: an ulp is 1e-3
            np.testing.assert_allclose(ours[key], value, rtol=rtol, atol=1e-30, err_msg=key)
        else:  # float32 on the host: NumPy's exp (2 ulps of PyTorch's at most: 2.4e-7), row sums in another order
            summed = key.endswith(("sum_exp_logits", "loss", "grad"))
            np.testing.assert_allclose(ours[key], value, rtol=1e-6 if summed else 2.5e-7, atol=1e-30, err_msg=key)
        if key.startswith("patched.") and ".half." in key:
            # float16 on MindSpore: the same bits as megatron's own function on MindSpore
            shipped = "shipped." + key[len("patched."):]
            assert np.array_equal(ours[key], ours[shipped], equal_nan=True), key
    assert bool(ours["patched.whole_vocabulary.exp_logits_is_logits"])
    # the partition's tokens outside it: masked, their predicted logit 0
    outside = reference["patched.partition.target_mask"]
    assert 0 < outside.sum() < outside.size
    assert (reference["patched.partition.predicted_logits"][outside] == 0).all()
