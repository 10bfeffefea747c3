"""Find the launches in a script and read each one's launcher options and script arguments.

A launch's words are followed through variables the way bash expands them: ``$DISTRIBUTED_ARGS``
unquoted becomes the words of the string assigned to it, ``"${ARGS[@]}"`` the words of the array,
recursively. For the launcher options the assignment in effect at the launch is used (the last one
before it, with ``+=`` appends); for the feature check every assignment before the launch counts
(a flag set in either branch of an ``if`` reaches the launch).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from mindspeed_ms.migrate import bash, torchrun
from mindspeed_ms.migrate.bash import Assignment, Place, Word
from mindspeed_ms.migrate.edits import EditPlan
from mindspeed_ms.migrate.findings import Finding

__all__ = ["Launch", "LaunchReader", "Option"]

# an unassigned variable in launcher position with one of these in its name holds launcher options
_OPTIONS_VARIABLE = re.compile(r"ARG|DIST|OPT|LAUNCH", re.IGNORECASE)
_SHELLS = ("bash", "sh", "zsh", "dash")


@dataclass(frozen=True)
class Option:
    """A launcher option as written: ``--nnodes 2`` (value_word) or ``--nnodes=2`` (value_inline)."""

    name: str
    spelled: str
    word: Word
    value_word: Word | None
    value_inline: str | None

    @property
    def value_text(self) -> str | None:
        return self.value_inline if self.value_word is None else self.value_word.text


@dataclass(frozen=True)
class Launch:
    """One launch command: its launcher, its options, its training script's arguments."""

    launcher: torchrun.Launcher
    place: Place
    command_words: tuple[Word, ...]
    options: tuple[Option, ...]
    script: Word | None
    script_args: tuple[Word, ...]


class LaunchReader:
    """Read launches out of a parsed script, registering every place they touch with the edit plan."""

    def __init__(self, source: bytes, root: Any, plan: EditPlan, findings: list[Any]) -> None:
        self.source = source
        self.root = root
        self.plan = plan
        self.findings = findings
        self.assigns: dict[str, list[Assignment]] = bash.assignments(root, source)
        self.reached: set[int] = set()
        self._index: dict[str, _DefinitionIndex] = {}

    def launches(self) -> list[Launch]:
        """Return every launch of the script, in source order; report those that cannot be converted."""
        found = []
        for node in bash.iter_nodes(self.root):
            if node.type == "heredoc_body":
                self._hidden(self.source[node.start_byte:node.end_byte], node.start_byte, "a heredoc")
            elif node.type == "command":
                launcher = torchrun.match_launcher(node, self.source)
                if launcher is not None:
                    found.append(self._read(node, launcher))
                else:
                    self._shell_string(node)
        return found

    # hidden launches ------------------------------------------------------------------------------
    def _hidden(self, body: bytes, offset: int, where: str) -> None:
        tree = bash.parse(body)
        for node in bash.iter_nodes(tree.root_node):
            if node.type != "command":
                continue
            launcher = torchrun.match_launcher(node, body)
            if launcher is None or launcher.kind != "torchrun":
                continue
            line, column = bash.position(self.source, offset + node.start_byte)
            self.findings.append(Finding(
                line, column, launcher.spelling.split()[0].rsplit("/", 1)[-1], "unconvertible",
                f"a launch inside {where} runs elsewhere (another shell or host) and is not converted: "
                "convert the script that runs there, or move the launch out"))

    def _shell_string(self, command: Any) -> None:
        """Report launches in ``bash -c '...'`` (also ``docker exec ... bash -c "..."``, ``ssh host sh -c``)."""
        name = command.child_by_field_name("name")
        nodes = ([name.children[0]] if name is not None and name.children else []) + bash.argument_nodes(command)
        values = [bash.static_value(node, self.source) for node in nodes]
        for index in range(len(nodes) - 2):
            program = values[index]
            if program is None or program.rsplit("/", 1)[-1] not in _SHELLS or values[index + 1] != "-c":
                continue
            body = nodes[index + 2]
            if body.type in ("string", "raw_string"):
                self._hidden(self.source[body.start_byte + 1:body.end_byte - 1], body.start_byte + 1,
                             f"{program} -c '...'")

    # expansion -----------------------------------------------------------------------------------
    def definitions(self, name: str, position: int, *, every: bool) -> list[Assignment]:
        """Return the assignments of ``name`` that a use at ``position`` sees.

        ``every=False``: the one in effect (the last before it, with the ``+=`` appends on top of its
        base). ``every=True``: every one that may be in effect, i.e. from the last top-level
        (unconditional) plain assignment before it on; the earlier ones are overwritten by that one
        whenever the use runs. A variable reassigned before each of many launches therefore costs each
        launch one assignment, not all the earlier ones (the conversion stays linear).
        """
        defs = self.assigns.get(name, [])
        index = self._index.get(name)
        if index is None:  # assignments come in source order: bisect instead of a scan per use
            index = self._index[name] = _DefinitionIndex(defs)
        end = bisect.bisect_left(index.starts, position)
        if end == 0:
            return defs if every else defs[-1:]
        if every:
            return defs[index.cut[end - 1]:end]
        first = end - 1
        while defs[first].is_append and first > 0:
            first -= 1
        return defs[first:end]

    def walk(self, words: list[Word] | tuple[Word, ...], position: int, *, every: bool) -> _Walker:
        """Return a walker over ``words`` that expands variable references on request."""
        return _Walker(self, words, position, every)

    def mark_reached(self, words: list[Word] | tuple[Word, ...], position: int) -> None:
        """Mark every assignment the words' variables come from (any reference, quoted or not) as used."""
        pending = [(name, position) for word in words for name in word.refs]
        seen: set[int] = set()
        while pending:
            name, at = pending.pop()
            for definition in self.definitions(name, at, every=True):
                if definition.start in seen:
                    continue
                seen.add(definition.start)
                self.reached.add(definition.start)
                pending.extend((ref, definition.start) for word in definition.words for ref in word.refs)

    # one launch ----------------------------------------------------------------------------------
    def _read(self, command: Any, launcher: torchrun.Launcher) -> Launch:
        place = bash.place_of_node(command)
        words = bash.command_words(command, self.source)[launcher.first_arg:]
        self.plan.register(place, words, lead=launcher.end)
        walker = self.walk(words, command.start_byte, every=False)
        options: list[Option] = []
        script = None
        while (word := walker.next()) is not None:
            shown = word.value if word.value is not None else word.text.lstrip("\"'")
            if word.value is None and word.ref is not None and _OPTIONS_VARIABLE.search(word.ref):
                self.findings.append(Finding(
                    word.line, word.column, word.text, "unconvertible",
                    f"${word.ref} is not assigned in this script: convert the torchrun options it holds "
                    "by hand (see the migration guide's table)"))
                continue
            if not shown.startswith("-") or shown == "-":
                script = word
                break
            spelled, inline = torchrun.split_option(shown)
            name = torchrun.canonical(spelled)
            value_word = walker.next(expand=False) if inline is None and torchrun.takes_value(name) else None
            if value_word is not None and value_word.place != word.place and word.place != place:
                # the option ends a string or array and would take its value from outside it: bash allows
                # that, but the value belongs to another place; leave both alone and say so
                walker.give_back(value_word)
                value_word = None
                self.findings.append(Finding(
                    word.line, word.column, spelled, "unconvertible",
                    f"{spelled} ends its variable and takes its value from the launch line; "
                    "put the value next to the option"))
            if value_word is not None and not torchrun.is_known(name) and _is_not_a_value(value_word):
                # an option neither launcher knows: do not let it swallow the next option or the script
                walker.give_back(value_word)
                value_word = None
            options.append(Option(name, spelled, word, value_word, inline))
        if script is not None and script.place == place:
            position = next(i for i, item in enumerate(words) if item.start == script.start)
            walker = self.walk(words[position + 1:], command.start_byte, every=True)
        script_args = _script_arguments(walker) if script is not None else []
        self.mark_reached(words, command.start_byte)
        return Launch(launcher, place, tuple(words), tuple(options), script, tuple(script_args))


class _DefinitionIndex:
    """Per variable: where its assignments start, and for each the last overwriting one at or before it."""

    def __init__(self, defs: list[Assignment]) -> None:
        self.starts = [item.start for item in defs]
        self.cut: list[int] = []
        last = 0
        for position, item in enumerate(defs):
            if item.is_unconditional and not item.is_append:
                last = position
            self.cut.append(last)


def _is_not_a_value(word: Word) -> bool:
    shown = word.value if word.value is not None else word.text
    return shown.startswith("-") or shown.rstrip("\"'").endswith(".py")


def _script_arguments(walker: _Walker) -> list[Word]:
    """Read the training script's arguments; the value of a feature flag that takes one is not expanded."""
    from mindspeed_ms.migrate.features import takes_value

    out = []
    while (word := walker.next()) is not None:
        out.append(word)
        if word.value is None or not word.value.startswith("--") or "=" in word.value:
            continue
        if takes_value(word.value) and (value := walker.next(expand=False)) is not None:
            out.append(value)
    return out


class _Walker:
    """Words of a launch in the order bash passes them, expanding ``$VAR`` only where asked.

    Option values are read with ``expand=False``: ``--nproc_per_node $NPUS`` keeps the word ``$NPUS``
    as written (that is where an edit must go), while ``$DISTRIBUTED_ARGS`` in option position becomes
    the words of the string assigned to it.
    """

    def __init__(self, reader: LaunchReader, words: list[Word] | tuple[Word, ...], position: int,
                 every: bool) -> None:
        self._reader = reader
        self._every = every
        self._stack: list[tuple[list[Word], int, frozenset[int]]] = [(list(words), position, frozenset())]
        self._index = [0]
        self._seen: set[tuple[int, int]] = set()
        self._returned: Word | None = None

    def give_back(self, word: Word) -> None:
        """Make ``word`` (just read) the next word again."""
        self._returned = word

    def next(self, *, expand: bool = True) -> Word | None:
        """Return the next word, or None at the end."""
        if self._returned is not None:
            word, self._returned = self._returned, None
            return word
        while self._stack:
            words, position, visited = self._stack[-1]
            if self._index[-1] >= len(words):
                self._stack.pop()
                self._index.pop()
                continue
            word = words[self._index[-1]]
            self._index[-1] += 1
            if expand and word.ref:
                defs = [item for item in self._reader.definitions(word.ref, position, every=self._every)
                        if item.start not in visited]
                if defs:
                    for definition in reversed(defs):
                        self._reader.reached.add(definition.start)
                        self._reader.plan.register(definition.place, definition.words)
                        self._stack.append((list(definition.words), definition.start,
                                            visited | {definition.start}))
                        self._index.append(0)
                    continue
            if self._every:
                if (word.start, word.end) in self._seen:
                    continue
                self._seen.add((word.start, word.end))
            return word
        return None
