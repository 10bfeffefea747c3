"""Convert a torchrun launch script into an msrun one, and check the MindSpeed features it switches on.

The rules are those of the MindSpeed MindSpore-backend migration guide (section 2), automated: the
launcher becomes ``msrun``, torchrun's distributed options become msrun's where they are written (an
inline option, a ``DISTRIBUTED_ARGS="..."`` string, an array), options msrun lacks are removed,
``--ai-framework mindspore`` is added, and every feature flag that reaches a launch is checked against
the feature table. See the README section "convert-launch" for the full list and the JSON schema.
"""

from __future__ import annotations

import gc
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from mindspeed_ms.migrate import bash, torchrun
from mindspeed_ms.migrate.bash import Assignment, Word
from mindspeed_ms.migrate.edits import Change, Edit, EditPlan, apply_edits, describe
from mindspeed_ms.migrate.errors import LaunchScriptError, ScriptSyntaxError
from mindspeed_ms.migrate.findings import PROBLEM_STATUSES, Finding
from mindspeed_ms.migrate.launch import Launch, LaunchReader
from mindspeed_ms.migrate.world_size import WorldSize

__all__ = ["Conversion", "ConvertOptions", "Finding", "convert_script"]

_NUMBER = re.compile(r"[0-9]+")
# a word that is one variable's value: $NAME, ${NAME}, "$NAME", "${NAME}"
_VARIABLE_WORD = re.compile(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?')
# a value made only of these needs no quotes anywhere: on a command line, in an array, in a string split by bash
_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_WRAP = "mindspeed-ms run -- "
_WRAP_WHY = " (every worker imports mindspeed_ms.adaptor first: the script needs no import of it)"

@dataclass(frozen=True)
class ConvertOptions:
    """What ``convert-launch`` adds and drops; the defaults are the migration guide's."""

    log_dir: str = "msrun_log"
    join: str = "False"
    cluster_time_out: str = "300"
    bind_core: str = "True"
    drop_unsupported: bool = False
    #: run each launch under ``mindspeed-ms run --`` (every worker imports mindspeed_ms.adaptor first)
    wrap_run: bool = False

    def __post_init__(self) -> None:
        if not _NUMBER.fullmatch(self.cluster_time_out) or int(self.cluster_time_out) == 0:
            raise LaunchScriptError(f"--cluster-time-out {self.cluster_time_out!r}: msrun wants a whole number of "
                                    "seconds greater than 0")
        for option, value in (("--join", self.join), ("--bind-core", self.bind_core)):
            if value not in ("True", "False"):
                raise LaunchScriptError(f"{option} {value!r}: msrun wants True or False")
        if not self.log_dir or any(char in self.log_dir for char in "\0\n\r"):
            raise LaunchScriptError(f"--log-dir {self.log_dir!r}: give a directory path on one line")

    def defaults(self) -> list[tuple[str, str]]:
        """Return the msrun options added when absent, as (canonical name, value)."""
        return [("log_dir", self.log_dir), ("join", self.join), ("cluster_time_out", self.cluster_time_out),
                ("bind_core", self.bind_core)]


@dataclass(frozen=True)
class Conversion:
    """The result of converting one script."""

    name: str
    source: bytes
    output: bytes
    changes: tuple[Change, ...]
    findings: tuple[Finding, ...]
    launches: int = 0
    converted: int = 0
    edits: tuple[Edit, ...] = field(default=(), repr=False)

    @property
    def is_changed(self) -> bool:
        return self.output != self.source

    @property
    def problems(self) -> tuple[Finding, ...]:
        """Findings that need the user (``unused`` ones are information only)."""
        return tuple(finding for finding in self.findings if finding.status in PROBLEM_STATUSES)

    def exit_code(self, *, check: bool = False) -> int:
        """0 when nothing remains to do, 1 when findings remain (with ``check``: also when it would change)."""
        return 1 if self.problems or (check and self.is_changed) else 0

    def to_dict(self) -> dict[str, object]:
        return {"script": self.name, "changed": self.is_changed, "launches": self.launches,
                "converted": self.converted, "changes": [change.to_dict() for change in self.changes],
                "findings": [finding.to_dict() for finding in self.findings],
                "problems": len(self.problems)}


def convert_script(source: bytes, *, name: str = "<script>", options: ConvertOptions | None = None,
                   use_bash: bool = True) -> Conversion:
    """Convert a launch script's bytes.

    Args:
        source: the script.
        name: how to name it in messages.
        options: what to add and drop (defaults: the migration guide's values).
        use_bash: also check input and output with ``bash -n`` when bash is on PATH.

    Returns:
        The conversion: output bytes, changes, findings.

    Raises:
        ScriptSyntaxError: the script does not parse (tree-sitter or ``bash -n``), with line and column.
        LaunchScriptError: the conversion would produce an invalid script (a bug: please report it).
    """
    options = options or ConvertOptions()
    tree = bash.check_syntax(source, name, use_bash=use_bash)
    converter = _Converter(source, tree.root_node, options)
    # The conversion allocates a few objects per word and frees almost nothing until it ends; the cyclic
    # collector's full passes over that growing heap would make a long script superlinear (4,000 launches
    # 4.8x the time of 1,000 with it on, 3.6x off). Nothing here makes cycles worth collecting meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        converter.run()
    finally:
        if collecting:
            gc.enable()
    edits = converter.plan.edits()
    output = apply_edits(source, edits)
    if edits:
        try:
            bash.check_syntax(output, f"{name} (converted)", use_bash=use_bash)
        except ScriptSyntaxError as error:  # our bug, not the user's: say so, with the cause
            raise LaunchScriptError(f"internal: converting {name} produced an invalid script ({error}); "
                                    "please report it with the script") from error
    findings = sorted(set(converter.findings), key=lambda item: (item.line, item.column, item.flag))
    converted = sum(launch.launcher.kind == "torchrun" for launch in converter.launches)
    return Conversion(name, source, output, tuple(describe(source, edits)), tuple(findings),
                      len(converter.launches), converted, tuple(edits))


class _Converter:
    def __init__(self, source: bytes, root: Any, options: ConvertOptions) -> None:
        self.source = source
        self.options = options
        self.plan = EditPlan(source)
        self.findings: list[Finding] = []
        self.reader = LaunchReader(source, root, self.plan, self.findings)
        self.launches: list[Launch] = []
        self._worker_nums: dict[tuple[int, int], str] = {}  # option word -> the --worker_num planned for it
        self.world_size = WorldSize(source, self.reader)

    def run(self) -> None:
        self.launches = self.reader.launches()
        for launch in self.launches:
            wrap = self.options.wrap_run and not launch.launcher.wrapped
            if launch.launcher.kind == "torchrun":
                prefix, why = (_WRAP, _WRAP_WHY) if wrap else ("", "")
                self.plan.edit(launch.launcher.start, launch.launcher.end, prefix + "msrun",
                               f"{launch.launcher.spelling} -> {prefix}msrun{why}")
                self._convert_options(launch)
            elif wrap:
                self.plan.edit(launch.launcher.start, launch.launcher.start, _WRAP,
                               f"msrun -> {_WRAP}msrun" + _WRAP_WHY)
            self._ensure_framework(launch)
            self._check_features(launch)
        self._report_unused()

    # launcher options -------------------------------------------------------------------------
    def _convert_options(self, launch: Launch) -> None:
        by_name = {option.name: option for option in launch.options}
        nproc, nnodes = by_name.get("nproc_per_node"), by_name.get("nnodes")
        standalone = "standalone" in by_name
        for option in launch.options:
            name = option.name
            if name == "nproc_per_node":
                self._rename(option, "--local_worker_num", "torchrun --nproc_per_node is msrun --local_worker_num")
            elif name == "nnodes":
                if ":" in (option.value_text or ""):
                    self._find(option.word, "unconvertible",
                               f"elastic {option.spelled} {option.value_text} (MIN:MAX) has no msrun equivalent: "
                               "msrun needs a fixed --worker_num; set it by hand", option.spelled)
                    continue
                world = self.world_size.spelled(nproc, option, option.word.start)
                self._rename(option, "--worker_num", "msrun --worker_num is the world size "
                             "(torchrun --nnodes x --nproc_per_node)", value=world)
            elif name in torchrun.KEPT:
                if option.spelled != torchrun.KEPT[name]:
                    self._rename(option, torchrun.KEPT[name], f"msrun spells it {torchrun.KEPT[name]}")
            elif name == "standalone":
                self._remove(option, "msrun has no --standalone: the launch becomes an explicit single-node "
                                     "setup (--worker_num = --local_worker_num, --master_addr=127.0.0.1)")
            elif name in torchrun.REMOVED:
                self._remove(option, f"removed {option.spelled}: {torchrun.REMOVED[name]}")
            elif name in torchrun.UNCONVERTIBLE:
                self._find(option.word, "unconvertible", torchrun.UNCONVERTIBLE[name], option.spelled)
            elif name not in torchrun.MSRUN_OPTIONS:
                self._find(option.word, "unconvertible", f"{option.spelled} is neither a torchrun nor an msrun "
                           "option; msrun would refuse it", option.spelled)
        added: list[str] = []
        if nproc is None:
            added.append("--local_worker_num=1")
        if nnodes is None:
            world = (nproc.value_text or "1") if nproc is not None else "1"
            added.append(f"--worker_num={world}")
        if standalone and "master_addr" not in by_name:
            added.append("--master_addr=127.0.0.1")
        # (text, needs quotes): a quoted value survives on a command line or in an array, not in a string bash splits
        defaults = [(f"--{name}={value}", False) if _PLAIN.fullmatch(value) else
                    (f"--{name}={shlex.quote(value)}", True)
                    for name, value in self.options.defaults() if name not in by_name]
        anchor = nproc or (launch.options[0] if launch.options else None)
        if anchor is None or anchor.word.place.kind in ("command", "array"):
            added += [text for text, _ in defaults]
        else:
            added += [text for text, is_quoted in defaults if not is_quoted]
            quoted = [text for text, is_quoted in defaults if is_quoted]
            if quoted:  # on the launch line itself, right after the launcher
                self.plan.append(None, launch.place, quoted, "msrun options added (see the migration guide); "
                                 "a quoted value goes on the launch line, not into a string bash splits")
        if anchor is None:
            self.plan.append(None, launch.place, added, "msrun options torchrun did not need "
                             "(msrun defaults to 8 workers)")
            return
        place_words = [option for option in launch.options if option.word.place == anchor.word.place]
        last = place_words[-1]
        last_word = last.value_word if last.value_word is not None and last.value_word.place == last.word.place \
            else last.word
        region_start = place_words[0].word if anchor.word.place == launch.place else None
        self.plan.append(last_word, anchor.word.place, added, "msrun options added (see the migration guide)",
                         region_start=region_start)

    def _rename(self, option: Any, spelling: str, reason: str, *, value: str | None = None) -> None:
        word = option.word
        offset = word.text.find(option.spelled)
        if offset not in (0, 1):
            self._find(word, "unconvertible", f"cannot rewrite {word.text!r}; write {spelling} by hand",
                       option.spelled)
            return
        if value is not None and self._worker_nums.setdefault((word.start, word.end), value) != value:
            # one option string shared by launches that need different values: one edit cannot serve both
            self._find(word, "unconvertible", f"{option.spelled} is shared by launches whose world sizes differ "
                       f"({self._worker_nums[(word.start, word.end)]} and {value}): give each launch its own "
                       "--worker_num", option.spelled)
            return
        if option.value_inline is not None and value is not None:
            quoted = word.text[:1] in "\"'" and len(word.text) > 1 and word.text.endswith(word.text[0])
            self.plan.replace(word, offset, len(word.text) - (1 if quoted else 0), f"{spelling}={value}", reason)
            return
        if spelling != option.spelled:
            self.plan.replace(word, offset, offset + len(option.spelled), spelling, reason)
        if value is not None and option.value_word is not None and option.value_word.text != value:
            self.plan.replace(option.value_word, 0, len(option.value_word.text), value, reason)

    def _remove(self, option: Any, reason: str) -> None:
        self.plan.remove(option.word, reason)
        if option.value_word is not None:
            self.plan.remove(option.value_word, reason)

    def _find(self, word: Word, status: str, reason: str, flag: str) -> None:
        self.findings.append(Finding(word.line, word.column, flag, status, reason))

    # script arguments ----------------------------------------------------------------------------
    def _ensure_framework(self, launch: Launch) -> None:
        if launch.script is None:
            # nothing to give --ai-framework to: added at the end it would become a launcher option
            line, column = bash.position(self.source, launch.launcher.start)
            self.findings.append(Finding(line, column, launch.launcher.spelling.split()[0].rsplit("/", 1)[-1],
                                         "unconvertible", "the launch names no training script: add the script "
                                         "(and --ai-framework mindspore after it) by hand"))
            return
        words = launch.script_args
        for index, word in enumerate(words):
            spelled, inline = torchrun.split_option(word.value or "")
            if spelled != "--ai-framework":
                continue
            if inline is not None:
                if inline != "mindspore":
                    self.plan.replace(word, word.text.find("=") + 1, len(word.text), "mindspore",
                                      "--ai-framework mindspore switches MindSpeed to the MindSpore backend")
            elif index + 1 < len(words) and words[index + 1].value != "mindspore":
                value = words[index + 1]
                self.plan.replace(value, 0, len(value.text), "mindspore",
                                  "--ai-framework mindspore switches MindSpeed to the MindSpore backend")
            return
        if launch.command_words:
            self.plan.append(launch.command_words[-1], launch.place, ["--ai-framework mindspore"],
                             "--ai-framework mindspore switches MindSpeed to the MindSpore backend")

    def _check_features(self, launch: Launch) -> None:
        from mindspeed_ms.migrate.features import FlagUse, judge, takes_value

        words = launch.script_args
        uses, owners = [], []
        for index, word in enumerate(words):
            if word.value is None or not word.value.startswith("--"):
                continue
            flag, inline = torchrun.split_option(word.value)
            value_word = words[index + 1] if (takes_value(flag) and inline is None
                                               and index + 1 < len(words)) else None
            # a value given through a variable is judged by every value that variable is assigned before the launch
            values = [inline] if inline is not None else \
                self._values(value_word, launch.launcher.start) if value_word is not None else [None]
            for value in values:
                uses.append(FlagUse(flag, value))
                owners.append((word, value_word))
        for (word, value_word), use, verdict in zip(owners, uses, judge(uses)):
            if verdict is None:
                continue
            shown = use.flag if use.value is None or not verdict.row.values else f"{use.flag} {use.value}"
            if verdict.status == "unsupported" and self.options.drop_unsupported:
                reason = f"dropped {shown}: {verdict.reason}"
                self.plan.remove(word, reason)
                if value_word is not None:
                    self.plan.remove(value_word, reason)
                continue
            self.findings.append(Finding(word.line, word.column, use.flag, verdict.status, verdict.reason,
                                         use.value if verdict.row.values else None))

    def _report_unused(self) -> None:
        for defs in self.reader.assigns.values():
            for definition in defs:
                if definition.start not in self.reader.reached:
                    self._unused_in(definition)

    def _unused_in(self, definition: Assignment) -> None:
        from mindspeed_ms.migrate.features import FlagUse, judge, takes_value

        words = definition.words
        for index, word in enumerate(words):
            if word.value is None or not word.value.startswith("--"):
                continue
            flag, inline = torchrun.split_option(word.value)
            has_value = takes_value(flag)
            if has_value is None:
                continue
            values = [inline] if inline is not None else (
                self._values(words[index + 1], definition.start) if has_value and index + 1 < len(words) else [None])
            verdict = next((item for item in judge([FlagUse(flag, value) for value in values]) if item), None)
            if verdict is None:
                continue
            what = f"{verdict.status}: {verdict.reason}"
            self._find(word, "unused", f"${definition.name} never reaches a launch, so {flag} has no effect "
                       f"here (if passed it would be {what})", flag)

    def _values(self, word: Word, position: int, depth: int = 0) -> list[str | None]:
        """Return the values ``word`` can have at ``position``: its own, or those of the variable it expands.

        ``--flag ${VALUE}`` (or ``"$VALUE"``) is followed through every assignment of ``VALUE`` before
        ``position`` (either branch of an ``if`` counts), recursively; ``[None]`` when nothing static is found.
        """
        if word.value is not None:
            return [word.value]
        match = _VARIABLE_WORD.fullmatch(word.text)
        name = word.ref or (match.group(1) if match else None)
        if name is None or depth > 8:
            return [None]
        found: list[str | None] = []
        for definition in self.reader.definitions(name, position, every=True):
            if len(definition.words) == 1:
                found += [item for item in self._values(definition.words[0], definition.start, depth + 1)
                          if item is not None]
        return list(dict.fromkeys(found)) or [None]
