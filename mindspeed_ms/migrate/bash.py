"""Lossless bash reading: parse with tree-sitter, check syntax, split values into words the way bash does.

Everything here works on byte offsets into the original script, so the converter can edit byte ranges
and leave every other byte alone. A *place* is where words are written — a command's arguments, a
double- or single-quoted string, an array — and a :class:`Word` remembers its place, its byte range,
its source text and, when it is static, the value bash would hand to the program.
"""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from mindspeed_ms.migrate.errors import ScriptSyntaxError

__all__ = ["Assignment", "Place", "Word", "argument_nodes", "assignments", "check_syntax", "command_words",
           "iter_nodes", "parse", "place_of_node", "position", "reference_of", "static_value", "text", "words_of_value"]

Node = Any  # tree_sitter.Node: typed loosely so that importing this module does not need tree-sitter's stubs

_WHITESPACE = b" \t\n"
# In double quotes a backslash escapes only these; before anything else it stays literally.
_DQ_ESCAPABLE = b'$`"\\'
_DOUBLE_TOKEN = re.compile(rb"[ \t\n]+|\\\n|\\.|[^ \t\n\\]+", re.DOTALL)
_SINGLE_TOKEN = re.compile(rb"[ \t\n]+|[^ \t\n]+")
_ESCAPED = {b"$", b"`", b'"', b"\\"}
_VALUE_NODES = {"word", "number", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
                "command_substitution", "arithmetic_expansion", "ansi_c_string", "translated_string",
                "process_substitution"}


@cache
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse(source: bytes) -> Any:
    """Parse ``source`` into a tree-sitter tree (no checks; see :func:`check_syntax`)."""
    return _parser().parse(source)


def text(source: bytes, node: Node) -> str:
    """Return the source text of ``node``."""
    return source[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


def iter_nodes(node: Node) -> Iterator[Node]:
    """Yield ``node`` and all its descendants, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _first_error(root: Node) -> Node | None:
    for node in iter_nodes(root):
        if node.type == "ERROR" or node.is_missing:
            return node
    return None


def check_syntax(source: bytes, name: str, *, use_bash: bool = True) -> Any:
    """Parse ``source`` and refuse it when tree-sitter or ``bash -n`` finds a syntax error.

    Args:
        source: the script's bytes.
        name: how to name the script in messages.
        use_bash: also run ``bash -n`` (when bash is on PATH).

    Returns:
        The tree-sitter tree.

    Raises:
        ScriptSyntaxError: with the 1-based line and column of the first error.
    """
    tree = parse(source)
    bash = shutil.which("bash") if use_bash else None
    if bash:
        result = subprocess.run([bash, "-n"], input=source, capture_output=True, timeout=30, check=False)
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip().splitlines()
            line = _bash_error_line(message)
            raise ScriptSyntaxError(f"{name}:{line}:1: bash -n rejects the script: {' '.join(message)}",
                                    line=line, column=1)
    bad = _first_error(tree.root_node) if tree.root_node.has_error else None
    if bad is not None:
        row, column = bad.start_point
        what = f"missing {bad.type!r}" if bad.is_missing else \
            f"unexpected {text(source, bad).strip()[:40]!r}" if bad.end_byte > bad.start_byte else "unexpected end"
        if bash:  # bash accepted it: the grammar, not the script, is at fault; still nothing can be edited safely
            raise ScriptSyntaxError(
                f"{name}:{row + 1}:{column + 1}: the bash grammar (tree-sitter-bash) cannot read this construct "
                f"({what}) although bash -n accepts it; rewrite that line (e.g. move a backgrounded heredoc "
                "into a function) and run again", line=row + 1, column=column + 1)
        raise ScriptSyntaxError(f"{name}:{row + 1}:{column + 1}: syntax error: {what}; fix the script "
                                f"and run again", line=row + 1, column=column + 1)
    return tree


def _bash_error_line(message: list[str]) -> int:
    for entry in message:  # "bash: line 3: syntax error near unexpected token `fi'"
        _, found, rest = entry.partition("line ")
        digits = rest.split(":", 1)[0]
        if found and digits.isdigit():
            return int(digits)
    return 1


@dataclass(frozen=True)
class Place:
    """Where words are written: ``kind`` is ``command``, ``string``, ``raw_string``, ``array`` or ``word``."""

    kind: str
    start: int
    end: int

    @property
    def key(self) -> tuple[int, int]:
        return (self.start, self.end)


@dataclass(frozen=True)
class Word:
    """One word bash would split out, with its byte range in the script.

    ``value`` is the word as the program receives it when it is static (quotes and escapes removed);
    None when it depends on an expansion. ``ref`` names the variable when the whole word is one
    unquoted expansion (``$X``, ``${X}``) or a quoted array expansion (``"${X[@]}"``): bash turns it into
    that variable's words. ``refs`` are all variables the word mentions.
    """

    start: int
    end: int
    text: str
    value: str | None
    place: Place
    line: int
    column: int
    ref: str | None = None
    refs: tuple[str, ...] = field(default=())


@lru_cache(maxsize=8)
def _line_starts(source: bytes) -> list[int]:
    return [0] + [match.end() for match in re.finditer(rb"\n", source)]


def position(source: bytes, offset: int) -> tuple[int, int]:
    """Return the 1-based (line, column) of a byte offset."""
    starts = _line_starts(source)
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1


def _variables(node: Node, source: bytes) -> tuple[str, ...]:
    names = []
    for child in iter_nodes(node):
        if child.type in ("simple_expansion", "expansion"):
            for grand in iter_nodes(child):
                if grand.type == "variable_name":
                    names.append(text(source, grand))
                    break
    return tuple(dict.fromkeys(names))


def reference_of(node: Node, source: bytes) -> str | None:
    """Return the variable a whole-word expansion refers to (``$X``, ``${X}``, ``"${X[@]}"``), else None."""
    if node.type == "string":
        inner = [child for child in node.children if child.type != '"']
        if len(inner) == 1 and inner[0].type == "expansion":
            subscript = [child for child in inner[0].children if child.type == "subscript"]
            if subscript and text(source, subscript[0]).endswith(("[@]", "[*]")):
                name = subscript[0].child_by_field_name("name")
                return text(source, name) if name is not None and name.type == "variable_name" else None
        return None
    if node.type == "simple_expansion":  # its text may start with blanks (see _skip_blanks)
        name = text(source, node).strip()[1:]
        return name if name.isidentifier() else None
    if node.type == "expansion":
        inside = text(source, node).strip()[2:-1]
        if inside.isidentifier():
            return inside
        if inside.endswith(("[@]", "[*]")) and inside[:-3].isidentifier():
            return inside[:-3]
    return None


def _unescape_word(raw: str) -> str:
    out, index = [], 0
    while index < len(raw):
        if raw[index] == "\\" and index + 1 < len(raw):
            index += 1
        out.append(raw[index])
        index += 1
    return "".join(out)


def _unescape_double(raw: bytes) -> bytes:
    out, index = bytearray(), 0
    while index < len(raw):
        if raw[index:index + 1] == b"\\" and index + 1 < len(raw) and raw[index + 1] in _DQ_ESCAPABLE:
            index += 1
        out += raw[index:index + 1]
        index += 1
    return bytes(out)


def static_value(node: Node, source: bytes) -> str | None:
    """Return the value of a word node as the program receives it, or None when it has expansions."""
    kind = node.type
    if kind == "word":
        return _unescape_word(text(source, node))
    if kind == "number":
        return text(source, node)
    if kind == "raw_string":
        return text(source, node)[1:-1]
    if kind == "string":
        parts = [child for child in node.children if child.type != '"']
        if any(child.type != "string_content" for child in parts):
            return None
        return _unescape_double(source[node.start_byte + 1:node.end_byte - 1]).decode("utf-8", "surrogateescape")
    if kind == "concatenation":
        pieces = [static_value(child, source) for child in node.children]
        return None if any(piece is None for piece in pieces) else "".join(pieces)  # type: ignore[arg-type]
    return None


def _node_word(node: Node, source: bytes, place: Place) -> Word:
    line, column = position(source, node.start_byte)
    return Word(node.start_byte, node.end_byte, text(source, node), static_value(node, source), place, line,
                column, reference_of(node, source), _variables(node, source))


def _skip_blanks(source: bytes, start: int, end: int) -> int:
    while start < end and source[start:start + 1] in (b" ", b"\t", b"\n"):
        start += 1
    return start


def _split_quoted(node: Node, source: bytes, place: Place) -> list[Word]:
    """Split a string's content into the words an unquoted use of its value gives (bash word splitting)."""
    start, end = node.start_byte + 1, node.end_byte - 1
    double = node.type == "string"
    # byte ranges of expansions inside the string: they belong to the word around them
    # tree-sitter lets an expansion's node start at the whitespace before its ``$``: skip that whitespace
    dynamic = [(_skip_blanks(source, child.start_byte, child.end_byte), child.end_byte, child)
               for child in node.children if child.type not in ('"', "string_content")] if double else []
    words: list[Word] = []
    word_start: int | None = None
    literal = bytearray()
    is_static = True
    refs: list[str] = []
    ref: str | None = None
    pieces = 0

    def finish(stop: int) -> None:
        nonlocal word_start, literal, is_static, refs, ref, pieces
        if word_start is not None:
            line, column = position(source, word_start)
            value = literal.decode("utf-8", "surrogateescape") if is_static else None
            words.append(Word(word_start, stop, source[word_start:stop].decode("utf-8", "surrogateescape"), value,
                              place, line, column, ref if pieces == 1 else None, tuple(dict.fromkeys(refs))))
        word_start, literal, is_static, refs, ref, pieces = None, bytearray(), True, [], None, 0

    # literal stretches are cut into tokens: blanks end a word, backslash-newline vanishes (double quotes),
    # an escape yields its character, anything else is literal text
    token = _DOUBLE_TOKEN if double else _SINGLE_TOKEN
    index = start
    for expansion_start, expansion_end, child in [*dynamic, (end, end, None)]:
        for match in token.finditer(source, index, expansion_start):
            piece = match.group()
            if piece[:1] in b" \t\n":
                finish(match.start())
                continue
            if piece == b"\\\n":
                continue
            if word_start is None:
                word_start = match.start()
            pieces += 2  # literal text: the word is no longer a bare expansion
            literal += piece[1:] if piece[:1] == b"\\" and piece[1:] in _ESCAPED else piece
        if child is None:
            break
        if word_start is None:
            word_start = expansion_start
        is_static = False
        refs.extend(_variables(child, source))
        ref = reference_of(child, source)
        pieces += 1
        index = expansion_end
    finish(end)
    return words


def words_of_value(node: Node, source: bytes) -> tuple[Place, list[Word]]:
    """Return the place and the words of an assignment's value node, split as an unquoted use splits them."""
    place = place_of_node(node)
    if node.type in ("string", "raw_string"):
        return place, _split_quoted(node, source, place)
    if node.type == "array":
        return place, [_node_word(child, source, place) for child in node.children if child.type in _VALUE_NODES]
    return place, [_node_word(node, source, place)]


def place_of_node(node: Node) -> Place:
    """Return the :class:`Place` a value or command node stands for."""
    kind = node.type if node.type in ("string", "raw_string", "array", "command") else "word"
    return Place(kind, node.start_byte, node.end_byte)


def argument_nodes(command: Node) -> list[Node]:
    """Return the argument nodes of a ``command`` node (not its name or its prefix assignments)."""
    name = command.child_by_field_name("name")
    return [child for child in command.children
            if child.type in _VALUE_NODES and (name is None or child.start_byte >= name.end_byte)]


def command_words(command: Node, source: bytes) -> list[Word]:
    """Return the argument words of a ``command`` node (not its name or its prefix assignments)."""
    place = place_of_node(command)
    return [_node_word(child, source, place) for child in argument_nodes(command)]


@dataclass(frozen=True)
class Assignment:
    """``NAME=value`` or ``NAME+=value`` somewhere in the script (not a command's prefix assignment)."""

    name: str
    start: int
    is_append: bool
    place: Place
    words: tuple[Word, ...]
    value_node: Any = field(compare=False, repr=False)
    #: a statement of the script's top level (not in an if, a loop, a function, a list or a subshell):
    #: when it runs, every earlier assignment of the name is overwritten for what follows
    is_unconditional: bool = False


def assignments(root: Node, source: bytes) -> dict[str, list[Assignment]]:
    """Return every variable assignment statement, by name, in source order."""
    found: dict[str, list[Assignment]] = {}
    for node in iter_nodes(root):
        if node.type != "variable_assignment" or (node.parent is not None and node.parent.type == "command"):
            continue
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is None or value is None or name_node.type != "variable_name":
            continue
        place, words = words_of_value(value, source)
        is_append = any(child.type == "+=" for child in node.children)
        found.setdefault(text(source, name_node), []).append(
            Assignment(text(source, name_node), node.start_byte, is_append, place, tuple(words), value,
                       _at_top_level(node)))
    return found


def _at_top_level(node: Node) -> bool:
    """Tell whether an assignment runs whenever the script reaches it (``A=1``, ``export A=1`` at top level)."""
    parent = node.parent
    while parent is not None and parent.type in ("declaration_command", "variable_assignments"):
        parent = parent.parent
    return parent is not None and parent.type == "program"
