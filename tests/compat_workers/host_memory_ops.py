"""NumPy arrays over MindSpore CPU tensors' memory (compat/host_memory.py) and the host kernels over them
(compat/host_kernels.py), compared with MindSpore's own kernels; print one JSON line per case.

Run in a subprocess under MSAdapter (it changes MindSpore's Tensor class for the whole process).
"""

from __future__ import annotations

import cProfile
import json
import pstats

import msadapter  # noqa: F401  (first: `import torch` is MSAdapter's)
import numpy as np
import torch
from mindspore import mint

from mindspeed_ms.compat import host_kernels, host_memory
from mindspeed_ms.compat.host_memory import host_array


def emit(case: str, **values: object) -> None:
    print(json.dumps({"case": case, **values}), flush=True)


def main() -> None:
    base = torch.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    host_array(base[1:3])[...] = -1.0  # a slice: offset into the storage
    host_array(base.t()[2])[...] = 7.0  # a transposed row: strided
    emit("views", base=base.numpy().tolist(), flat_size=int(host_array(base, flat=True).size))

    half = torch.tensor(np.array([1.5, -2.0, 3.25], dtype=np.float32)).to(torch.bfloat16)
    emit("bfloat16", bits=host_array(half).view(np.uint16).tolist(),
         expected=(np.array([1.5, -2.0, 3.25], np.float32).view(np.uint32) >> 16).tolist())

    rng = np.random.default_rng(0)
    a = rng.standard_normal(5000).astype(np.float32)
    b = rng.standard_normal(5000).astype(np.float32)
    target, source = torch.tensor(a), torch.tensor(b)
    expected = mint.add(target, source).asnumpy()
    host_kernels.add(host_array(target), host_array(source))
    scaled = torch.tensor(a)
    host_kernels.scale(host_array(scaled), np.float32(0.37))
    emit("kernels", add_equal=bool(np.array_equal(target.numpy(), expected)),
         scale_equal=bool(np.array_equal(scaled.numpy(), (torch.tensor(a) * 0.37).numpy())))

    # the arrays are kept by memory, shape, strides and dtype: one address read every way gets its own array
    base = torch.tensor(np.arange(12, dtype=np.float32))
    reads = {"flat": host_array(base, flat=True), "matrix": host_array(base.view(3, 4)),
             "transposed": host_array(base.view(3, 4).t()), "bits": host_array(base, dtype=np.uint32),
             "again": host_array(base)}
    reads["again"][0] = 100.0  # a write through a kept array lands, and every read sees it
    emit("kept", shapes={name: list(array.shape) for name, array in reads.items()},
         transposed=host_array(base.view(3, 4).t()).tolist(), bits=int(host_array(base, dtype=np.uint32)[0]),
         base=base.numpy().tolist(), same_array=host_array(base) is reads["again"])

    _both_paths()


def _described(array: np.ndarray) -> list[object]:
    face = array.__array_interface__
    return [face["data"][0], list(face["shape"]), list(array.strides), face["typestr"], array.dtype.str]


def _both_paths() -> None:
    """host_array in C and in Python over the same tensors: the same arrays (described, and the same objects: one
    kept array per key), whichever path reads first; the same errors; MindSpore's readers booked to MindSpore."""
    compiled, python = host_memory.host_array_function(True), host_memory.python_host_array
    base = torch.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    half = torch.tensor(np.arange(6, dtype=np.float32)).to(torch.bfloat16)
    import mindspore

    reads = {"plain": (base, {}), "slice": (base[1:3], {}), "transposed": (base.t(), {}),
             "strided row": (base.t()[2], {}), "flat": (base, {"flat": True}), "no sync": (base, {"sync": False}),
             "as uint32": (base, {"dtype": np.uint32}), "flat int32": (base, {"dtype": np.int32, "flat": 1}),
             "bfloat16": (half, {}), "mindspore tensor": (mindspore.Tensor(np.ones((2, 3), np.float32)), {}),
             "0-d": (torch.tensor(np.float32(3.5)), {}), "shape list": (base.view(2, 12), {"sync": True})}
    cases = {}
    for index, (name, (tensor, options)) in enumerate(reads.items()):
        first, second = (compiled, python) if index % 2 else (python, compiled)
        a, b = first(tensor, **options), second(tensor, **options)
        cases[name] = {"same": _described(a) == _described(b), "kept": a is b,
                       "values": a.tobytes() == b.tobytes()}
    errors = {}
    for name, call in {"unknown keyword": lambda f: f(base, bogus=1), "positional": lambda f: f(base, True),
                       "no tensor": lambda f: f(), "not a tensor": lambda f: f(object())}.items():
        got = []
        for function in (compiled, python):
            try:
                call(function)
                got.append("no error")
            except Exception as error:  # noqa: BLE001  (the same type and message on both paths)
                got.append(f"{type(error).__name__}: {error}")
        errors[name] = got
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(7):
        compiled(base.t())
    profile.disable()
    booked = {f"{key[2]}": calls for key, (_, calls, *_) in pstats.Stats(profile).stats.items()  # type: ignore[attr-defined]
              if "_data_ptr" in key[2] or "stride" in key[2] or "sync" in key[2]}
    emit("both_paths", compiled=type(compiled).__name__, default=host_array is compiled, cases=cases, errors=errors,
         booked=booked)


if __name__ == "__main__":
    main()
