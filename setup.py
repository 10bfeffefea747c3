"""Build configuration beyond pyproject.toml: the optional C accelerators.

``mindspeed_ms.engine._identity`` finds module-level bindings by identity without running any Python
code per binding (see ``mindspeed_ms/engine/_identity.c``). It is optional: where it cannot be compiled
(no compiler, a free-threaded Python), the install goes on and the pure-Python pass runs instead, with
the same results (``mindspeed_ms.engine.aliases.is_accelerated()`` tells which one runs).

``mindspeed_ms.compat._host_loops`` runs the float32 loops of ``mindspeed_ms.compat.host_kernels`` (Adam's
moments and update) in one pass per element, the same operations in the same order (no fused multiply-add:
``-ffp-contract=off``; ``-fno-math-errno`` only lets ``sqrtf`` vectorize). Optional too: NumPy's passes run
without it, with the same bits (``host_kernels.ACCELERATED`` tells which one runs).

``mindspeed_ms.compat._host_gelu`` computes gelu (erf form) and its gradient over float32 host memory with
glibc's vector ``erff``/``expf`` (libmvec); where it cannot be built or the CPU lacks AVX2, MindSpore's
kernels compute gelu as before (``mindspeed_ms.compat.gelu``).

``mindspeed_ms.engine._passthrough`` holds the thin wrappers of hot ops (a refusal's exception class, the grad
flag check) as C objects without a Python frame (see ``mindspeed_ms/engine/_passthrough.c``). It is optional the
same way: without it ``mindspeed_ms.engine.passthrough`` builds the same wrappers as Python closures
(``mindspeed_ms.engine.passthrough.is_accelerated()`` tells which).

``mindspeed_ms.compat._view_add`` is DDP's ``main_grad.add_(grad)`` (``mindspeed_ms.compat.inplace.add_through_view``)
in one C call: the same tests and the same IEEE sums, no Python frame. Optional: without it the Python function
runs (``mindspeed_ms.compat.inplace.has_view_adder()`` tells which).

``mindspeed_ms.compat._host_copies`` is the masked copy of ``mindspeed_ms.compat.host_arithmetic.masked_fill``
(MaskedFill's work at the mid size) in one pass: copies only, the same bits. Optional: NumPy's two passes run
without it (``host_arithmetic.COPIES_ACCELERATED`` tells which).

``mindspeed_ms.compat._host_dispatch`` is ``mindspeed_ms.compat.host_memory.host_array`` and
``mindspeed_ms.compat.host_outputs.new_float32`` in one C call each (the same reads and lookups, no Python frame;
anything unusual goes to the Python functions). Optional: without it the Python functions run
(``host_memory.has_compiled_dispatch()`` tells which).

``mindspeed_ms.compat._function_checks`` is the per-call reads and checks of ``mindspeed_ms.compat.function_grads``
(each custom autograd Function's inputs' shapes and dtypes, its saved tensors' versions, the returned gradients
that pass unchanged) in one C call each; anything else goes to the Python check. Optional: without it the Python
loops run (``function_grads.ACCELERATED`` tells which).

``mindspeed_ms.compat._host_bodies`` is the forward and backward bodies of the host Functions (megatron's linear
layers, bias-dropout-add, MLP block, layer norm and core attention: ``mindspeed_ms.compat.host_linear``,
``host_bda``, ``host_mlp``, ``host_layer_norm``, ``host_attention``) in one C call each: the same calls in the same
order, the arithmetic in the same Python functions. Optional: without it the Python bodies run (each module's
``has_compiled_bodies()`` tells which).

``mindspeed_ms.compat._host_wrappers`` is the per-call tests of ``host_layer_norm``'s, ``host_bda``'s and
``host_linear``'s wrappers in one C call each (the same tests in the same order, then the same Function or the wrapped
function). Optional: without it the Python wrappers run (each module's ``has_compiled_wrapper()`` tells which).
"""

from setuptools import Extension, setup

#: the profiler-event helpers five of the extensions include
PROFILE_EVENTS = "mindspeed_ms/_profile_events.h"

setup(ext_modules=[
    Extension("mindspeed_ms.engine._identity", ["mindspeed_ms/engine/_identity.c"], optional=True),
    Extension("mindspeed_ms.compat._host_loops", ["mindspeed_ms/compat/_host_loops.c"], optional=True,
              extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off"]),
    Extension("mindspeed_ms.compat._host_gelu", ["mindspeed_ms/compat/_host_gelu.c"], optional=True,
              extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off"], libraries=["mvec", "m"]),
    Extension("mindspeed_ms.engine._passthrough", ["mindspeed_ms/engine/_passthrough.c"], optional=True,
              depends=[PROFILE_EVENTS]),
    Extension("mindspeed_ms.compat._view_add", ["mindspeed_ms/compat/_view_add.c"], optional=True,
              extra_compile_args=["-O3", "-ffp-contract=off"], depends=[PROFILE_EVENTS]),
    Extension("mindspeed_ms.compat._host_copies", ["mindspeed_ms/compat/_host_copies.c"], optional=True,
              extra_compile_args=["-O3"]),
    Extension("mindspeed_ms.compat._host_dispatch", ["mindspeed_ms/compat/_host_dispatch.c"], optional=True,
              extra_compile_args=["-O2"], depends=[PROFILE_EVENTS]),
    Extension("mindspeed_ms.compat._host_bodies", ["mindspeed_ms/compat/_host_bodies.c"], optional=True,
              extra_compile_args=["-O2"], depends=[PROFILE_EVENTS]),
    Extension("mindspeed_ms.compat._host_wrappers", ["mindspeed_ms/compat/_host_wrappers.c"], optional=True,
              extra_compile_args=["-O2"], depends=[PROFILE_EVENTS]),
    Extension("mindspeed_ms.compat._function_checks", ["mindspeed_ms/compat/_function_checks.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mindspeed_ms.compat._host_rows", ["mindspeed_ms/compat/_host_rows.c"], optional=True,
              extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off", "-pthread"],
              extra_link_args=["-pthread"]),
])
