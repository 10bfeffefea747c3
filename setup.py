"""Build configuration beyond pyproject.toml: the optional C accelerator of the alias pass.

``mindspeed_ms.engine._identity`` finds module-level bindings by identity without running any Python
code per binding (see ``mindspeed_ms/engine/_identity.c``). It is optional: where it cannot be compiled
(no compiler, a free-threaded Python), the install goes on and the pure-Python pass runs instead, with
the same results (``mindspeed_ms.engine.aliases.is_accelerated()`` tells which one runs).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mindspeed_ms.engine._identity", ["mindspeed_ms/engine/_identity.c"], optional=True)])
