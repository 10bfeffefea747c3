"""mindspeed_ms.compat.msadapter: torch.manual_seed also seeds MindSpore (and NumPy through it)."""

from __future__ import annotations

import mindspore
import numpy as np
from _helpers import subprocess_env

from mindspeed_ms.compat.msadapter import seed_mindspore_wrapper


def test_seeded_manual_seed_calls_the_original_and_returns_its_generator() -> None:
    calls: list = []

    def manual_seed(seed: int) -> str:
        calls.append(seed)
        return "generator"

    assert seed_mindspore_wrapper(manual_seed)(42) == "generator"
    assert calls == [42]


def test_seeded_manual_seed_makes_numpy_and_mindspore_draws_repeat() -> None:
    seeded = seed_mindspore_wrapper(lambda seed: None)
    seeded(1234)
    first = (np.random.rand(3), mindspore.get_seed())
    seeded(1234)
    second = (np.random.rand(3), mindspore.get_seed())
    np.testing.assert_array_equal(first[0], second[0])
    assert first[1] == second[1] == 1234


def test_seeded_manual_seed_accepts_64_bit_seeds() -> None:
    seeded = seed_mindspore_wrapper(lambda seed: None)
    seeded((1 << 40) + 7)
    assert mindspore.get_seed() == ((1 << 40) + 7) % (1 << 32)


FULL_SCRIPT = """
import json, types
import msadapter, torch
from mindspeed_ms import PatchRegistry
from mindspeed_ms.patches import msadapter as provider

def dtypes():
    return [str(torch.full((2,), value).dtype) for value in (7.0, 7, True)]

before = dtypes()  # read through MSAdapter's caching torch proxy before the patch
registry = PatchRegistry("full")
provider.register(registry, types.SimpleNamespace())
registry.apply()
after = dtypes()
explicit = str(torch.full((2,), 7.0, dtype=torch.float16).dtype)
values = torch.full((2,), 7.5).numpy().tolist()
registry.revert()
print(json.dumps({"before": before, "after": after, "explicit": explicit, "values": values, "reverted": dtypes()}))
"""


def test_full_takes_pytorch_dtype_from_the_fill_value_through_the_torch_proxy() -> None:
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FULL_SCRIPT], capture_output=True, text=True, timeout=300,
                          env=subprocess_env())
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == ["Int64", "Int64", "Int64"]  # MSAdapter's own, the divergence patched
    assert result["after"] == ["Float32", "Int64", "Bool"]  # PyTorch's
    assert result["explicit"] == "Float16"
    assert result["values"] == [7.5, 7.5]
    assert result["reverted"] == result["before"]
