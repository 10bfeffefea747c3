"""NumPy arrays over MindSpore CPU tensors' memory (compat/host_memory.py) and the host kernels over them
(compat/host_kernels.py), compared with MindSpore's own kernels; print one JSON line per case.

Run in a subprocess under MSAdapter (it changes MindSpore's Tensor class for the whole process).
"""

from __future__ import annotations

import json

import msadapter  # noqa: F401  (first: `import torch` is MSAdapter's)
import numpy as np
import torch
from mindspore import mint

from mindspeed_ms.compat import host_kernels
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


if __name__ == "__main__":
    main()
