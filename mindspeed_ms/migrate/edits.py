"""Byte-range edits of a script: plan them by word, merge them, apply them, describe them line by line.

Edits are planned against :class:`~mindspeed_ms.migrate.bash.Word` objects of a registered place
(a command's arguments, a string, an array) so that removing words can take their separators with
them and added words can copy the place's layout (one option per line with ``\\`` continuations, or
all on one line). Nothing outside the edited ranges changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mindspeed_ms.migrate.bash import Place, Word
from mindspeed_ms.migrate.errors import LaunchScriptError

__all__ = ["Change", "Edit", "EditPlan", "apply_edits", "describe"]


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``source[start:end]`` by ``text`` (an insertion when start == end)."""

    start: int
    end: int
    text: str
    reason: str = field(compare=False, default="")


@dataclass(frozen=True)
class Change:
    """What one group of edits did to the script, as whole lines (1-based ``line`` of the first)."""

    line: int
    before: str
    after: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "before": self.before, "after": self.after, "reasons": list(self.reasons)}


@dataclass
class _PlaceEdits:
    words: list[Word]
    lead: int | None  # end of what precedes the first word when its gap counts for layout (a launcher)
    replaced: dict[int, list[Edit]] = field(default_factory=dict)
    removed: dict[int, str] = field(default_factory=dict)
    # (anchor index, first index of the layout region, texts, reason)
    appended: list[tuple[int, int, tuple[str, ...], str]] = field(default_factory=list)


class EditPlan:
    """Collect edits by word and place; produce non-overlapping byte edits."""

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._places: dict[tuple[int, int], _PlaceEdits] = {}
        self._loose: dict[Edit, None] = {}  # an ordered set: a script can hold thousands of launches

    def register(self, place: Place, words: list[Word] | tuple[Word, ...], *, lead: int | None = None) -> None:
        """Make ``place`` editable with its full, ordered word list (first registration wins)."""
        self._places.setdefault(place.key, _PlaceEdits(list(words), lead))

    def _entry(self, word: Word) -> tuple[_PlaceEdits, int]:
        entry = self._places.get(word.place.key)
        if entry is None:
            raise LaunchScriptError(f"internal: place of {word.text!r} (line {word.line}) was not registered")
        for index, candidate in enumerate(entry.words):
            if candidate.start == word.start and candidate.end == word.end:
                return entry, index
        raise LaunchScriptError(f"internal: {word.text!r} (line {word.line}) is not a word of its place")

    def replace(self, word: Word, start: int, end: int, text: str, reason: str) -> None:
        """Replace ``word.text[start:end]`` (offsets into the word's text) by ``text``."""
        entry, index = self._entry(word)
        prefix = len(word.text[:start].encode("utf-8", "surrogateescape"))
        length = len(word.text[start:end].encode("utf-8", "surrogateescape"))
        edit = Edit(word.start + prefix, word.start + prefix + length, text, reason)
        edits = entry.replaced.setdefault(index, [])
        if edit not in edits:
            edits.append(edit)

    def remove(self, word: Word, reason: str) -> None:
        """Remove ``word`` with the separator that joins it to the words kept around it."""
        entry, index = self._entry(word)
        entry.removed.setdefault(index, reason)

    def append(self, word: Word | None, place: Place, texts: list[str], reason: str, *,
               region_start: Word | None = None) -> None:
        """Add ``texts`` after ``word`` (or at the start of ``place`` when None), in the place's layout.

        Args:
            word: the anchor; the words go after the last word at or before it that is kept.
            place: the anchor's place (needed when ``word`` is None).
            texts: the words to add, in order.
            reason: why, for the change list.
            region_start: the first word whose gaps decide the layout (default: the place's first word).
        """
        if word is not None and word.place != place:
            raise LaunchScriptError(f"internal: anchor {word.text!r} (line {word.line}) is not in the place "
                                    "the words are added to")
        entry = self._places[place.key]
        anchor = -1 if word is None else self._entry(word)[1]
        first = 0 if region_start is None else self._entry(region_start)[1]
        item = (anchor, first, tuple(texts), reason)
        if item not in entry.appended:
            entry.appended.append(item)

    def edit(self, start: int, end: int, text: str, reason: str) -> None:
        """Add a raw byte edit (for words that belong to no place, such as the launcher itself)."""
        self._loose.setdefault(Edit(start, end, text, reason), None)

    def _separator(self, entry: _PlaceEdits, first: int, last: int) -> str:
        source, words = self._source, entry.words
        gaps = [source[words[index].end:words[index + 1].start] for index in range(first, last)]
        if entry.lead is not None and first == 0 and words:
            gaps.insert(0, source[entry.lead:words[0].start])
        for gap in reversed(gaps):
            if b"\n" in gap:
                tail = gap[gap.rfind(b"\n") + 1:]
                indent = tail[:len(tail) - len(tail.lstrip(b" \t"))].decode()
                return (" \\\n" if b"\\\n" in gap else "\n") + indent
        return " "

    def edits(self) -> list[Edit]:
        """Return all planned edits as sorted, non-overlapping byte edits.

        Raises:
            LaunchScriptError: two edits touch the same bytes differently.
        """
        result = list(self._loose)
        for entry in self._places.values():
            words = entry.words
            for edits in entry.replaced.values():
                result.extend(edits)
            removed = sorted(entry.removed)
            runs: list[list[int]] = []
            for index in removed:
                if runs and runs[-1][-1] == index - 1:
                    runs[-1].append(index)
                else:
                    runs.append([index])
            for run in runs:
                low, high = run[0], run[-1]
                reason = entry.removed[low]
                if low > 0:
                    result.append(Edit(words[low - 1].end, words[high].end, "", reason))
                elif high + 1 < len(words):
                    result.append(Edit(words[low].start, words[high + 1].start, "", reason))
                else:
                    result.append(Edit(words[low].start, words[high].end, "", reason))
            for anchor, first, texts, reason in entry.appended:
                kept = [index for index in range(anchor, -1, -1) if index not in entry.removed]
                if kept:
                    at = kept[0]
                    separator = self._separator(entry, first, max(at, first))
                    result.append(Edit(words[at].end, words[at].end,
                                       "".join(separator + text for text in texts), reason))
                elif entry.lead is not None:
                    result.append(Edit(entry.lead, entry.lead, "".join(" " + text for text in texts), reason))
                elif words:
                    result.append(Edit(words[0].start, words[0].start, " ".join(texts) + " ", reason))
        return _merge(result)


def _merge(edits: list[Edit]) -> list[Edit]:
    merged: list[Edit] = []
    # dict.fromkeys drops duplicates and keeps the planning order, which the stable sort keeps for insertions at
    # one offset: iterating a set would order them by hash, different on every run (PYTHONHASHSEED)
    for edit in sorted(dict.fromkeys(edits), key=lambda item: (item.start, item.end != item.start, item.end)):
        if merged and edit.start < merged[-1].end:
            raise LaunchScriptError(
                f"internal: overlapping edits at bytes {merged[-1].start}-{merged[-1].end} and "
                f"{edit.start}-{edit.end}; please report this script")
        merged.append(edit)
    return merged


def apply_edits(source: bytes, edits: list[Edit]) -> bytes:
    """Return ``source`` with ``edits`` (sorted, non-overlapping) applied."""
    out, position = bytearray(), 0
    for edit in edits:
        out += source[position:edit.start]
        out += edit.text.encode("utf-8", "surrogateescape")
        position = edit.end
    out += source[position:]
    return bytes(out)


def _line_bounds(source: bytes, start: int, end: int) -> tuple[int, int]:
    low = source.rfind(b"\n", 0, start) + 1
    newline = source.find(b"\n", max(end - 1, start) if end > start else start)
    return low, len(source) if newline < 0 else newline


def describe(source: bytes, edits: list[Edit]) -> list[Change]:
    """Group ``edits`` by the lines they touch and return each group's lines before and after."""
    groups: list[tuple[int, int, list[Edit]]] = []
    for edit in edits:
        low, high = _line_bounds(source, edit.start, edit.end)
        if groups and low <= groups[-1][1]:
            groups[-1] = (groups[-1][0], max(high, groups[-1][1]), [*groups[-1][2], edit])
        else:
            groups.append((low, high, [edit]))
    changes = []
    line, counted = 1, 0  # line numbers are counted on from the previous group: linear in the script's size
    for low, high, group in groups:
        line += source.count(b"\n", counted, low)
        counted = low
        before = source[low:high]
        after = apply_edits(before, [Edit(item.start - low, item.end - low, item.text) for item in group])
        reasons = tuple(dict.fromkeys(item.reason for item in group if item.reason))
        changes.append(Change(line, before.decode("utf-8", "surrogateescape"),
                              after.decode("utf-8", "surrogateescape"), reasons))
    return changes
