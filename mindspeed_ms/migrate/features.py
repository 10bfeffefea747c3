"""The feature table: which MindSpeed flags the MindSpore backend supports, and a judge for a script's flags.

The table is data, shipped beside this module as ``features.json`` (one object, ``{"schema": 1, "about": ...,
"rows": [...]}``), one row per flag (or per flag and set of values), each citing the public document it comes
from. :func:`load_table` reads and validates a table; :func:`feature_table` is the shipped one, loaded once.
:func:`judge` turns the flags a launch script sets into verdicts: ``unsupported`` (status ``no``) or
``conditional`` (status ``partial`` whose condition is not met, or cannot be checked).

Flag names are matched in MindSpeed's hyphen form; ``_`` in a flag name is read as ``-`` before the lookup, and
``--flag=value`` given as one word is split.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from mindspeed_ms.migrate.errors import FeatureTableError

__all__ = [
    "STATUSES",
    "FeatureRow",
    "FlagUse",
    "Verdict",
    "load_table",
    "feature_table",
    "row_for",
    "judge",
    "normalize_flag",
]

logger = logging.getLogger(__name__)

STATUSES = ("no", "partial", "yes")
"""The statuses a row may have: unsupported, supported under a condition, supported."""

_TABLE_RESOURCE = "features.json"
_SCHEMA = 1
_FLAG_RE = re.compile(r"--[a-z0-9][a-z0-9-]*\Z")
_REQUIRED_KEYS = frozenset({"flag", "status", "takes_value", "reason", "source", "mindspeed"})
_OPTIONAL_KEYS = frozenset({"values", "requires", "excludes"})


@dataclass(frozen=True)
class FeatureRow:
    """One row of the feature table.

    Attributes:
        flag: the MindSpeed flag, hyphen form (``--use-ascend-mc2``).
        status: ``"no"``, ``"partial"`` or ``"yes"``.
        takes_value: whether the flag is followed by a value (``False`` for ``store_true`` flags).
        values: the row applies only when the flag's value is one of these (empty: to any use of the flag).
        requires: for a ``partial`` row, flags that must also be set.
        excludes: for a ``partial`` row, flags that must not be set with it.
        reason: one sentence for the user.
        source: where the fact comes from (``repo@branch:path:line`` of a public document or code; where
            sources disagree, each of them, and the row is ``partial`` with a reason that names them).
        mindspeed: the MindSpeed release(s) the verdict holds for (``"2.2.0_core_r0.12.1"``).
    """

    flag: str
    status: str
    takes_value: bool
    values: tuple[str, ...]
    requires: tuple[str, ...]
    excludes: tuple[str, ...]
    reason: str
    source: str
    mindspeed: str = ""


@dataclass(frozen=True)
class FlagUse:
    """A flag as a launch script sets it.

    Attributes:
        flag: the flag as written (``--use_ascend_mc2`` and ``--flag=value`` are accepted).
        value: the word after the flag for flags that take a value; ``None`` when there is none or it is unknown.
    """

    flag: str
    value: str | None = None


@dataclass(frozen=True)
class Verdict:
    """Why one flag use is a problem on the MindSpore backend.

    Attributes:
        flag: the flag, normalised to the hyphen form.
        value: the value it was judged with (``None`` when none was known).
        status: ``"unsupported"`` or ``"conditional"``.
        reason: the row's reason, plus which condition is not met for a ``conditional`` verdict.
        row: the table row behind the verdict.
    """

    flag: str
    value: str | None
    status: str
    reason: str
    row: FeatureRow


def normalize_flag(flag: str) -> tuple[str, str | None]:
    """Return ``flag`` in MindSpeed's hyphen form and the value glued to it with ``=`` (``None`` when none).

    Args:
        flag: a flag as written in a script, e.g. ``--use_ascend_mc2`` or ``--context-parallel-algo=hybrid_cp_algo``.

    Returns:
        ``(name, value)``: ``("--use-ascend-mc2", None)``, ``("--context-parallel-algo", "hybrid_cp_algo")``.
    """
    name, sep, value = flag.strip().partition("=")
    return name.replace("_", "-"), (value if sep else None)


def load_table(path: str | os.PathLike[str] | None = None) -> tuple[FeatureRow, ...]:
    """Read and validate a feature table.

    Args:
        path: a JSON file in the table's format; ``None`` reads the table shipped with the package.

    Returns:
        The rows, in file order.

    Raises:
        FeatureTableError: the file cannot be read, is not JSON, or a row is malformed (unknown status, missing
            reason or source, a flag not in hyphen form, the same flag and values twice, ``requires``/``excludes``
            on a row that is not ``partial``, ...); ``.row`` is the index of the bad row.
    """
    if path is None:
        where = f"mindspeed_ms/migrate/{_TABLE_RESOURCE}"
        try:
            text = resources.files("mindspeed_ms.migrate").joinpath(_TABLE_RESOURCE).read_text(encoding="utf-8")
        except OSError as error:
            raise FeatureTableError(f"feature table {where} cannot be read ({error}); reinstall mindspeed_ms",
                                    path=where) from None
    else:
        where = os.fspath(path)
        try:
            with open(where, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise FeatureTableError(f"feature table {where} cannot be read: {error}", path=where) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise FeatureTableError(
            f"feature table {where} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            path=where) from None
    rows = _validate(data, where)
    logger.debug("loaded %d feature rows from %s", len(rows), where)
    return rows


@cache
def feature_table() -> tuple[FeatureRow, ...]:
    """Return the feature table shipped with the package (read and validated once).

    Raises:
        FeatureTableError: the shipped table is malformed.
    """
    return load_table()


@cache
def _shipped_index() -> Mapping[str, tuple[FeatureRow, ...]]:
    return _index(feature_table())


def _index(table: Sequence[FeatureRow]) -> dict[str, tuple[FeatureRow, ...]]:
    index: dict[str, list[FeatureRow]] = {}
    for row in table:
        index.setdefault(row.flag, []).append(row)
    return {flag: tuple(rows) for flag, rows in index.items()}


def row_for(flag: str, value: str | None = None, *, table: Sequence[FeatureRow] | None = None
            ) -> FeatureRow | None:
    """Find the row that decides about one use of ``flag``.

    A row with ``values`` applies only when ``value`` is one of them; otherwise the flag's row without ``values``
    applies, if the table has one.

    Args:
        flag: the flag; ``_`` is read as ``-`` and ``--flag=value`` is split (the glued value wins over ``value``).
        value: the flag's value, ``None`` when none is known (then no ``values`` row applies).
        table: the rows to search; the shipped table by default.

    Returns:
        The row, or ``None`` when the table says nothing about this use.
    """
    name, glued = normalize_flag(flag)
    index = _shipped_index() if table is None else _index(table)
    return _pick(index.get(name, ()), glued if glued is not None else value)


def takes_value(flag: str, *, table: Sequence[FeatureRow] | None = None) -> bool | None:
    """Return whether ``flag`` is followed by a value, or None when the table does not know the flag.

    All rows of one flag agree on it (checked when the table is loaded).
    """
    name, _ = normalize_flag(flag)
    rows = (_shipped_index() if table is None else _index(table)).get(name, ())
    return rows[0].takes_value if rows else None


def judge(uses: Sequence[FlagUse], *, table: Sequence[FeatureRow] | None = None) -> list[Verdict | None]:
    """Judge every flag a script sets against the feature table.

    ``no`` rows give an ``unsupported`` verdict. ``partial`` rows with ``requires``/``excludes`` give a
    ``conditional`` verdict only when a required flag is missing from ``uses`` or an excluded one is present;
    ``partial`` rows without such conditions always give one (their reason is the condition). ``yes`` rows and
    flags the table does not know give ``None``.

    Args:
        uses: the flags the script sets, in order; together they are the context for ``requires``/``excludes``.
        table: the rows to judge by; the shipped table by default.

    Returns:
        One entry per use, in order: a :class:`Verdict`, or ``None`` when the use is fine.
    """
    index = _shipped_index() if table is None else _index(table)
    normalized = [normalize_flag(use.flag) for use in uses]
    present = {name for name, _ in normalized}
    verdicts: list[Verdict | None] = []
    for use, (name, glued) in zip(uses, normalized):
        value = glued if glued is not None else use.value
        row = _pick(index.get(name, ()), value)
        verdicts.append(None if row is None else _verdict(row, name, value, present))
    return verdicts


def _pick(rows: Sequence[FeatureRow], value: str | None) -> FeatureRow | None:
    if value is not None:
        for row in rows:
            if row.values and value in row.values:
                return row
    return next((row for row in rows if not row.values), None)


def _verdict(row: FeatureRow, name: str, value: str | None, present: set[str]) -> Verdict | None:
    if row.status == "no":
        return Verdict(name, value, "unsupported", row.reason, row)
    if row.status != "partial":
        return None
    if not row.requires and not row.excludes:
        return Verdict(name, value, "conditional", row.reason, row)
    unmet = [f"{flag} is not set" for flag in row.requires if flag not in present]
    unmet += [f"{flag} is also set" for flag in row.excludes if flag in present]
    if not unmet:
        return None
    return Verdict(name, value, "conditional", f"{row.reason} Here {' and '.join(unmet)}.", row)


class _RowProblem(Exception):
    """What is wrong with one row (turned into a :class:`FeatureTableError` that names the row)."""


def _fail(where: str, problem: str, index: int | None = None, flag: object = None) -> FeatureTableError:
    at = "" if index is None else f" row {index}" + (f" ({flag!r})" if isinstance(flag, str) else "")
    return FeatureTableError(f"feature table {where}{at}: {problem}", path=where, row=index)


def _validate(data: Any, where: str) -> tuple[FeatureRow, ...]:
    if not isinstance(data, dict):
        raise _fail(where, "the top level must be an object with 'schema', 'about' and 'rows', "
                           f"got {type(data).__name__}")
    if data.get("schema") != _SCHEMA:
        raise _fail(where, f"'schema' must be {_SCHEMA}, got {data.get('schema')!r}")
    if not isinstance(data.get("about"), str) or not data["about"].strip():
        raise _fail(where, "'about' must be a non-empty string describing the table")
    if not isinstance(data.get("rows"), list):
        raise _fail(where, "'rows' must be a list of row objects")
    rows: list[FeatureRow] = []
    for index, raw in enumerate(data["rows"]):
        try:
            rows.append(_row(raw))
        except _RowProblem as problem:
            raise _fail(where, str(problem), index, raw.get("flag") if isinstance(raw, dict) else None) from None
    _check_overlaps(rows, where)
    return tuple(rows)


def _row(raw: Any) -> FeatureRow:
    if not isinstance(raw, dict):
        raise _RowProblem(f"must be an object, got {type(raw).__name__}")
    missing = sorted(_REQUIRED_KEYS - raw.keys())
    if missing:
        raise _RowProblem(f"missing {', '.join(missing)}")
    unknown = sorted(raw.keys() - _REQUIRED_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise _RowProblem(f"unknown key(s) {', '.join(unknown)}; a row has {', '.join(sorted(_REQUIRED_KEYS))} "
                          f"and optionally {', '.join(sorted(_OPTIONAL_KEYS))}")
    flag = _flag(raw["flag"], "flag")
    status = raw["status"]
    if status not in STATUSES:
        raise _RowProblem(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if not isinstance(raw["takes_value"], bool):
        raise _RowProblem(f"takes_value must be true or false, got {raw['takes_value']!r}")
    for key in ("reason", "source", "mindspeed"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise _RowProblem(f"{key} must be a non-empty string (every row says why, where that comes from and "
                              "for which MindSpeed release)")
    values = _strings(raw.get("values", []), "values")
    if "values" in raw and not values:
        raise _RowProblem("values is empty; leave it out to match every use of the flag")
    if values and not raw["takes_value"]:
        raise _RowProblem("has values but takes_value is false; a flag without a value cannot be matched by value")
    requires = tuple(_flag(item, "requires") for item in _strings(raw.get("requires", []), "requires"))
    excludes = tuple(_flag(item, "excludes") for item in _strings(raw.get("excludes", []), "excludes"))
    if (requires or excludes) and status != "partial":
        raise _RowProblem(f"requires/excludes are only meaningful on a 'partial' row, this one is {status!r}")
    if flag in requires or flag in excludes:
        raise _RowProblem("names its own flag in requires/excludes")
    both = sorted(set(requires) & set(excludes))
    if both:
        raise _RowProblem(f"{', '.join(both)} both required and excluded")
    return FeatureRow(flag, status, raw["takes_value"], values, requires, excludes,
                      raw["reason"].strip(), raw["source"].strip(), raw["mindspeed"].strip())


def _flag(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _FLAG_RE.match(value):
        raise _RowProblem(f"{key}: {value!r} is not a flag in MindSpeed's hyphen form (e.g. '--use-ascend-mc2')")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise _RowProblem(f"{key} must be a list of non-empty strings, got {value!r}")
    if len(set(value)) != len(value):
        raise _RowProblem(f"{key} lists an entry twice: {value!r}")
    return tuple(value)


def _check_overlaps(rows: Sequence[FeatureRow], where: str) -> None:
    first_of: dict[str, int] = {}
    claimed: dict[tuple[str, str], int] = {}
    for index, row in enumerate(rows):
        first = first_of.setdefault(row.flag, index)
        if rows[first].takes_value != row.takes_value:
            raise _fail(where, f"takes_value disagrees with row {first} for the same flag", index, row.flag)
        for key in [(row.flag, value) for value in row.values] or [(row.flag, "")]:
            if key in claimed:
                what = f"value {key[1]!r}" if key[1] else "the flag (without values)"
                raise _fail(where, f"duplicate flag+values: {what} is already decided by row {claimed[key]}",
                            index, row.flag)
            claimed[key] = index
