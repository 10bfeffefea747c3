import os
import pathlib
import subprocess

from torch.utils import cpp_extension

os.environ["TORCH_CUDA_ARCH_LIST"] = ""


def load(args):
    _, bare_metal_major, bare_metal_minor = _get_cuda_bare_metal_version(cpp_extension.CUDA_HOME)
    raise NotImplementedError("stand-in: the real function compiles the fused CUDA softmax kernels here")


def _get_cuda_bare_metal_version(cuda_dir):
    raw_output = subprocess.check_output([cuda_dir + "/bin/nvcc", "-v"], universal_newlines=True)
    output = raw_output.split()
    release_idx = output.index("release") + 1
    release = output[release_idx].split(".")
    return raw_output, release[0], release[1][0]


def _create_build_dir(buildpath):
    pathlib.Path(buildpath).mkdir(parents=True, exist_ok=True)
