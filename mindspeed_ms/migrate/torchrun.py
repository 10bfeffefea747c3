"""torchrun's and msrun's command lines: how a launch is spelled, which options exist, what maps to what.

Facts from ``torch.distributed.run`` / ``torch.distributed.launch`` (argparse accepts both ``_`` and
``-`` spellings of every long option) and from msrun's ``--help`` in MindSpore 2.7.1.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mindspeed_ms.migrate.bash import argument_nodes, static_value, text

__all__ = ["KEPT", "LAUNCH_MODULES", "MSRUN_OPTIONS", "REMOVED", "Launcher", "canonical", "match_launcher",
           "takes_value"]

LAUNCH_MODULES = ("torch.distributed.launch", "torch.distributed.run")

# torchrun option (canonical: no dashes, underscores) -> whether it takes a value
_TORCHRUN_OPTIONS = {
    "nnodes": True, "nproc_per_node": True, "node_rank": True, "master_addr": True, "master_port": True,
    "rdzv_backend": True, "rdzv_endpoint": True, "rdzv_id": True, "rdzv_conf": True, "standalone": False,
    "max_restarts": True, "monitor_interval": True, "start_method": True, "role": True, "module": False,
    "no_python": False, "run_path": False, "log_dir": True, "redirects": True, "tee": True,
    "local_addr": True, "local_ranks_filter": True, "logs_specs": True, "use_env": False,
    "numa_binding": True, "event_log_handler": True, "signals_to_handle": True,
}
_SHORT = {"r": "redirects", "t": "tee", "m": "module"}

# msrun's own options (all take a value): a launch that already uses msrun is left as written
MSRUN_OPTIONS = frozenset({
    "worker_num", "local_worker_num", "master_addr", "master_port", "node_rank", "log_dir", "join",
    "cluster_time_out", "bind_core", "sim_level", "sim_rank_id", "rank_table_file", "worker_log_name",
    "tail_worker_log",
})

# kept, under msrun's spelling
KEPT: Mapping[str, str] = MappingProxyType({"node_rank": "--node_rank", "master_addr": "--master_addr",
                                            "master_port": "--master_port", "log_dir": "--log_dir"})
# removed: msrun has no equivalent and would refuse them
REMOVED: Mapping[str, str] = MappingProxyType({
    "rdzv_backend": "msrun has no rendezvous backend (it uses --master_addr/--master_port)",
    "rdzv_endpoint": "msrun has no rendezvous endpoint (it uses --master_addr/--master_port)",
    "rdzv_id": "msrun has no rendezvous id",
    "rdzv_conf": "msrun has no rendezvous configuration",
    "max_restarts": "msrun does not restart failed workers",
    "monitor_interval": "msrun has no worker monitor interval",
    "start_method": "msrun starts workers itself",
    "role": "msrun has no worker roles",
    "redirects": "msrun always writes each worker's output to --log_dir/worker_N.log",
    "tee": "msrun always writes each worker's output to --log_dir/worker_N.log",
    "local_addr": "msrun has no --local_addr",
    "local_ranks_filter": "msrun has no rank filter for logs (see --tail_worker_log)",
    "logs_specs": "msrun has no log specs",
    "use_env": "msrun always passes the rank through the environment",
    "numa_binding": "msrun binds cores with --bind_core",
    "event_log_handler": "msrun has no event log handler",
    "signals_to_handle": "msrun has no signal list",
})
# cannot be expressed with msrun: reported, left as written
UNCONVERTIBLE: Mapping[str, str] = MappingProxyType({
    "module": "msrun runs a script file, not a module (-m/--module): point the launch at the script",
    "no_python": "msrun always runs the script with python (--no-python)",
    "run_path": "msrun runs a script file (--run-path)",
})

_PYTHON = re.compile(r"python[0-9.]*\Z")
_SPELLING = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*")


def canonical(option: str) -> str:
    """Return an option's name without dashes, with ``_`` for ``-`` (``--nproc-per-node`` -> ``nproc_per_node``)."""
    name = option.lstrip("-")
    if option.startswith("-") and not option.startswith("--") and name in _SHORT:
        return _SHORT[name]
    return name.replace("-", "_")


def takes_value(name: str) -> bool:
    """Return whether the canonical torchrun/msrun option ``name`` takes a value."""
    return name in MSRUN_OPTIONS or _TORCHRUN_OPTIONS.get(name, True)


def is_known(name: str) -> bool:
    """Return whether ``name`` is a torchrun or msrun option."""
    return name in _TORCHRUN_OPTIONS or name in MSRUN_OPTIONS


def split_option(value: str) -> tuple[str, str | None]:
    """Split ``--name=value`` into (``--name``, ``value``); (``--name``, None) without ``=``."""
    match = _SPELLING.match(value)
    if match is None:
        return value, None
    rest = value[match.end():]
    return match.group(), rest[1:] if rest.startswith("=") else None


@dataclass(frozen=True)
class Launcher:
    """The words of a command that name the launcher.

    ``kind`` is ``torchrun`` or ``msrun``; ``start``/``end`` span the launcher words (``torchrun``, or
    ``python -u -m torch.distributed.run``); ``first_arg`` is the index in the command's argument list of
    the first launcher argument; ``wrapped`` tells that the launch runs under ``mindspeed-ms run [...] --``.
    """

    kind: str
    start: int
    end: int
    first_arg: int
    spelling: str
    wrapped: bool = False


def _basename(word: str) -> str:
    return os.path.basename(word)


def match_launcher(command: Any, source: bytes) -> Launcher | None:
    """Return the launcher of a ``command`` node, or None when the command is not a launch."""
    name = command.child_by_field_name("name")
    if name is None:
        return None
    args = argument_nodes(command)
    program = static_value(name.children[0], source) if name.children else None
    start = name.start_byte
    if program is not None and _basename(program) == "env":
        # env [NAME=VALUE ...] LAUNCHER ...: the launcher is the first word that is not an assignment/option
        for index, arg in enumerate(args):
            value = static_value(arg, source)
            if value is None or "=" in value.split("/")[0] or value.startswith("-"):
                continue
            inner = _match_words(value, args[index + 1:], source, arg.start_byte, arg.end_byte)
            if inner is None and _basename(value) == "mindspeed-ms":
                inner = _match_wrapped(args[index + 1:], source)
            if inner is not None:
                return Launcher(inner.kind, inner.start, inner.end, inner.first_arg + index + 1, inner.spelling,
                                wrapped=inner.wrapped)
            return None
        return None
    if program is not None and _basename(program) == "mindspeed-ms":
        return _match_wrapped(args, source)
    is_expansion = name.children and name.children[0].type in ("simple_expansion", "expansion")
    if program is None and not is_expansion:
        return None
    found = _match_words(program, args, source, start, name.end_byte)
    if found is None and is_expansion:
        found = _match_python(args, source, start, text(source, name))
    return found


def _match_wrapped(args: list[Any], source: bytes) -> Launcher | None:
    """``mindspeed-ms run [--ai-framework NAME] [--] LAUNCHER ...``: the launcher is the command it runs."""
    if not args or static_value(args[0], source) != "run":
        return None
    index = 1
    while index < len(args):
        value = static_value(args[index], source)
        if value is None:
            return None
        if value == "--":
            index += 1
            break
        if value == "--ai-framework":
            index += 2
        elif value.startswith("-"):
            index += 1
        else:
            break
    if index >= len(args):
        return None
    program = static_value(args[index], source)
    inner = _match_words(program, args[index + 1:], source, args[index].start_byte, args[index].end_byte)
    if inner is None:
        return None
    return Launcher(inner.kind, inner.start, inner.end, inner.first_arg + index + 1, inner.spelling, wrapped=True)


def _match_words(program: str | None, args: list[Any], source: bytes, start: int, end: int) -> Launcher | None:
    if program is None:
        return None
    base = _basename(program)
    if base in ("torchrun", "msrun"):
        return Launcher(base, start, end, 0, program)
    if _PYTHON.match(base):
        return _match_python(args, source, start, program)
    return None


def _match_python(args: list[Any], source: bytes, start: int, program: str) -> Launcher | None:
    for index, arg in enumerate(args):
        value = static_value(arg, source)
        if value is None:
            return None
        if value == "-m" and index + 1 < len(args):
            module = static_value(args[index + 1], source)
            if module in LAUNCH_MODULES:
                return Launcher("torchrun", start, args[index + 1].end_byte, index + 2, f"{program} -m {module}")
            return None
        if value.startswith("-m") and value[2:] in LAUNCH_MODULES:
            return Launcher("torchrun", start, arg.end_byte, index + 1, f"{program} {value}")
        if not value.startswith("-") or value in ("-c", "-"):
            return None  # a script or -c: not a launch module
    return None
