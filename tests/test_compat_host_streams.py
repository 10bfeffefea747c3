"""torch.cuda.Stream() / torch.cuda.stream(s) on the MindSpore CPU backend: megatron's alltoall MoE dispatcher
(MindSpeed's maybe_dtoh_and_synchronize) moves its splits to the host inside ``torch.cuda.stream(side_stream)``.
With the adaptor applied the same code runs and gives what PyTorch gives without a side stream (the reference
interpreter is CPU PyTorch, which has no CUDA stream: there the work runs on its one stream as here)."""

from __future__ import annotations

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

given = np.load(sys.argv[1])
counts = torch.tensor(given["counts"])
splits = counts.reshape(2, -1).sum(dim=1)
{side_stream}
    tokens_per_expert = counts.to(torch.device("cpu"), non_blocking=True)
    input_splits = splits.to(torch.device("cpu"), non_blocking=True).numpy()
{synchronize}
np.savez(sys.argv[2], tokens_per_expert=tokens_per_expert.numpy(), input_splits=input_splits)
'''

_SIDE_STREAM = '''
stream = torch.cuda.Stream()
on_side_stream = torch.cuda.current_stream() != stream
assert not on_side_stream  # one stream on the CPU backend
assert isinstance(stream, torch.cuda.Stream)
with torch.cuda.stream(stream):'''


def _run(python: str, prelude: str, side_stream: str, synchronize: str, folder: Path,
         extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    script = _SCRIPT.format(prelude=prelude, side_stream=side_stream, synchronize=synchronize)
    run_python(python, "-c", textwrap.dedent(script), str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_a_side_stream_context_runs_megatrons_host_copies_as_pytorch_does(tmp_path: Path) -> None:
    np.savez(tmp_path / "inputs.npz", counts=np.array([3, 0, 5, 2, 1, 4], np.int64))
    expected = _run(reference_python(), "", "if True:", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _SIDE_STREAM, "stream.synchronize()", tmp_path,
               ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert np.array_equal(got[key], value), key


def test_stream_context_refuses_what_is_not_a_stream() -> None:
    from mindspeed_ms.compat.msadapter_cpu import HostStream, stream

    with stream(HostStream(priority=-1)), stream(None):
        pass
    with pytest.raises(TypeError, match=r"torch.cuda.stream\(\) expects a torch.cuda.Stream or None.*got int"):
        stream(3)
