"""Types of the alias pass's C accelerator (``_identity.c``)."""

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

def find_bindings(modules: Mapping[str, Any], originals: Sequence[Any], /) -> list[tuple[str, ModuleType, str, int]]:
    """Return ``(module name, module, binding name, index in originals)`` of each binding holding an original."""
