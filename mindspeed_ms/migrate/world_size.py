"""msrun's ``--worker_num`` from torchrun's ``--nproc_per_node`` x ``--nnodes``, spelled as the script spells them.

msrun takes the world size where torchrun takes its two factors: a number when both are numbers, else a
variable the script already assigns the product to (``W=$(($A*$B))``), else the product written out.
"""

from __future__ import annotations

import re
from typing import Any

from mindspeed_ms.migrate import bash
from mindspeed_ms.migrate.bash import Word
from mindspeed_ms.migrate.launch import LaunchReader

__all__ = ["WorldSize", "product_operands"]


def _operand(word: Word | None, inline: str | None) -> tuple[str, str]:
    """Classify a worker-count value: ("num", "8"), ("var", "NPUS") or ("text", raw text)."""
    raw = (inline or "") if word is None else word.text
    value = inline if word is None else word.value
    if value is not None and value.isdigit():
        return ("num", value)
    match = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?', raw)
    return ("var", match.group(1)) if match else ("text", raw)


def product_operands(node: Any, source: bytes) -> list[tuple[str, str]] | None:
    """Return the two operands of ``$((A*B))``, or None when ``node`` is not such a product."""
    if node.type != "arithmetic_expansion":
        return None
    inner = [child for child in node.children if child.type not in ("$((", "))", "$[", "]")]
    if len(inner) != 1 or inner[0].type != "binary_expression":
        return None
    parts = inner[0].children
    if len(parts) != 3 or parts[1].type != "*":
        return None
    operands = []
    for part in (parts[0], parts[2]):
        raw = bash.text(source, part)
        if part.type == "number" or raw.isdigit():
            operands.append(("num", raw))
        elif part.type == "variable_name":
            operands.append(("var", raw))
        elif part.type in ("simple_expansion", "expansion") and bash.reference_of(part, source):
            operands.append(("var", bash.reference_of(part, source) or ""))
        else:
            return None
    return operands


class WorldSize:
    """The world sizes of one script's launches; the script's ``$((A*B))`` assignments are indexed once."""

    def __init__(self, source: bytes, reader: LaunchReader) -> None:
        self._source = source
        self._reader = reader
        self._index: dict[tuple[tuple[str, str], ...], list[tuple[int, str]]] | None = None

    def spelled(self, nproc: Any, nnodes: Any, at: int) -> str:
        """Return msrun's ``--worker_num`` for ``--nproc_per_node`` (None: 1) x ``--nnodes`` of a launch at ``at``.

        A number when both are numbers; the other factor as written when one is 1; else a variable assigned
        ``$((A*B))`` of the same operands before the launch (``WORLD_SIZE`` preferred); else ``$((A*B))``.
        """
        per_node = _operand(nproc.value_word, nproc.value_inline) if nproc is not None else ("num", "1")
        nodes = _operand(nnodes.value_word, nnodes.value_inline)
        if per_node[0] == nodes[0] == "num":
            return str(int(per_node[1]) * int(nodes[1]))
        if per_node == ("num", "1"):  # one factor is 1: the world size is the other one, as written
            return nnodes.value_text or "1"
        if nodes == ("num", "1"):
            return nproc.value_text or "1"
        wanted = tuple(sorted([per_node, nodes]))
        candidates = [name for start, name in self._products().get(wanted, ()) if start < at]
        if candidates:
            return "$" + ("WORLD_SIZE" if "WORLD_SIZE" in candidates else candidates[0])
        return f"$(({per_node[1]}*{nodes[1]}))"

    def _products(self) -> dict[tuple[tuple[str, str], ...], list[tuple[int, str]]]:
        """Return the assignments of ``$((A*B))`` by their sorted operands, built once per script."""
        if self._index is None:
            index: dict[tuple[tuple[str, str], ...], list[tuple[int, str]]] = {}
            for name, defs in self._reader.assigns.items():
                for definition in defs:
                    operands = product_operands(definition.value_node, self._source)
                    if operands is not None:
                        index.setdefault(tuple(sorted(operands)), []).append((definition.start, name))
            self._index = index
        return self._index
