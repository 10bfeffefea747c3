"""PyTorch's checkpoint format under MSAdapter (mindspeed_ms.compat.serialization), against real PyTorch.

A state dict shaped like Megatron-LM's legacy ``model_optim_rng.pt`` (every dtype megatron saves, nested
optimizer state, 0-d tensors, python/NumPy/torch/tracker RNG states, a parameter, a dtype, strided views)
is written by real PyTorch's ``torch.save``, loaded by MSAdapter's ``torch.load``, saved again by MSAdapter's
``torch.save`` and loaded by real PyTorch: every leaf keeps its type, dtype, shape and bytes.
"""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
from _helpers import ROOT, reference_python, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "legacy_checkpoint.py"


def _run(python: str, *args: str) -> str:
    env = subprocess_env(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return run_python(python, str(WORKER), *args, env=env)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("legacy")
    python = reference_python()
    _run(python, "write", str(folder))
    _run(sys.executable, "roundtrip", str(folder), "--ai-framework", "mindspore")
    (folder / "compare.txt").write_text(_run(python, "compare", str(folder)))
    return folder


def test_msadapter_loads_pytorch_checkpoint_with_identical_leaves(round_trip: Path) -> None:
    reference = json.loads((round_trip / "reference.json").read_text())
    candidate = json.loads((round_trip / "candidate.json").read_text())
    assert len(candidate) == len(reference)
    for ref, cand in zip(reference, candidate):
        assert cand == ref, f"{ref[:2]} {str(ref[2])[:200]}\nMSAdapter: {cand[:2]} {str(cand[2])[:200]}"
    kinds = {row[1] for row in reference}
    assert {"Tensor", "Parameter", "ndarray", "tuple", "Size", "dtype"} <= kinds
    dtypes = {row[2][0] for row in reference if row[1] == "Tensor"}
    assert dtypes == {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def test_pytorch_loads_msadapter_checkpoint_bit_equal(round_trip: Path) -> None:
    assert (round_trip / "compare.txt").read_text() == ""
    with zipfile.ZipFile(round_trip / "candidate.pt") as archive:
        names = archive.namelist()
        assert names[0] == "archive/data.pkl"
        assert "archive/byteorder" in names
        assert "archive/version" in names
        for info in archive.infolist():  # PyTorch aligns each record's data to 64 bytes (mmap loading)
            assert info.compress_type == zipfile.ZIP_STORED
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0, info.filename


def test_weights_only_refuses_other_globals_as_pytorch_does(round_trip: Path) -> None:
    message = (round_trip / "weights_only.txt").read_text()
    assert "weights_only=True refuses the global" in message
    assert "weights_only=False" in message


def test_a_non_zip_file_is_refused_with_a_typed_error() -> None:
    from mindspeed_ms.compat.serialization import CheckpointFormatError, load

    with pytest.raises(CheckpointFormatError, match="not a zip checkpoint") as caught:
        load(io.BytesIO(b"not a checkpoint"))
    assert caught.value.source == "<stream>"


BUFFER_VIEW_SAVE = """
import io, json
import mindspeed_ms.adaptor
import torch

buffer = torch.arange(12, dtype=torch.float32)
params = [torch.nn.Parameter(torch.zeros(2, 2)), torch.nn.Parameter(torch.zeros(3))]
# megatron's distributed optimizer maps each parameter into its contiguous buffer this way
params[0].data = buffer[4:8].view(2, 2)
params[1].data = buffer[8:11].view(3)
stream = io.BytesIO()
torch.save({"a": params[0].detach(), "b": params[1].detach(), "p": params[0]}, stream)
stream.seek(0)
loaded = torch.load(stream, weights_only=False)
print(json.dumps({key: value.tolist() for key, value in loaded.items()}))
"""


def test_a_parameter_living_in_a_buffer_view_saves_its_own_values() -> None:
    # before: every such parameter was written as the buffer's first elements (Megatron-LM's torch-format checkpoint
    # with --use-distributed-optimizer held output_layer.weight's values under every name)
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK="mindspore")
    out = run_python(sys.executable, "-c", BUFFER_VIEW_SAVE, env=env)
    assert json.loads(out.strip().splitlines()[-1]) == {"a": [[4.0, 5.0], [6.0, 7.0]], "b": [8.0, 9.0, 10.0],
                                                        "p": [[4.0, 5.0], [6.0, 7.0]]}
