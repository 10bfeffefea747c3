"""Subnormal floats on MindSpore's CPU threads: kept, as PyTorch keeps them; ``torch.set_flush_denormal``.

MindSpore 2.7.1 (x86_64) switches on flush-to-zero and denormals-are-zero (MXCSR bits 0x8000 and 0x0040) in the
thread functions of its three CPU thread pools (``Worker::Run``, ``ActorWorker::Run``, ``ParallelWorker::Run``
in ``libmindspore_core.so``: mindrt's ``threadpool.cc`` under ``PLATFORM_86``, unconditionally, with no setting),
once, when a pool thread starts (the pools start at the first op). Every kernel part those threads run then
reads a subnormal input as 0 and writes a subnormal result as 0, while the parts the calling (Python) thread runs
keep them: ``torch.full((100000,), 1.4e-45) * 1`` was 0.0 (PyTorch 1.4e-45), ``0 / 1.4e-45`` nan (PyTorch 0),
differently from call to call. ``LpNormCpuKernelMod::LaunchKernel`` (``libmindspore_ops_cpu.so``) clears both
bits around its computation and then sets them, on whichever thread ran it: the Python thread too, after which
NumPy and the host kernels flush as well.

:func:`keep_subnormals` finds those writes in the loaded libraries' code (the exact instruction sequence
``stmxcsr; or/and imm, mem; ldmxcsr; stmxcsr; or/and imm, mem; ldmxcsr`` on one stack slot) and sets their
immediates to the identity (``or 0``, ``and 0xffffffff``): each change is inside one instruction of a function
MindSpore runs when a pool thread starts, or around LpNorm. MXCSR then stays what the thread had, and a new
thread starts with its creator's (Linux copies it at ``clone``): the Python thread's, without the two bits, as in
PyTorch. It must run before MindSpore's pools start (the adaptation calls it right after importing MindSpore; a
pool thread started earlier keeps the bits: :attr:`KeepReport.early_threads` names them). Nothing else of
MindSpore changes; where the sequence is not found (another build), nothing is written and the report says so.

:func:`set_flush_denormal` is ``torch.set_flush_denormal``: like PyTorch's (``at::cpu::set_flush_denormal``) it
sets or clears both bits on the calling thread only, which threads created afterwards inherit; it returns True on
x86_64 and False (changing nothing) where that register is not there.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mindspeed_ms.compat.errors import FlushDenormalModeError

__all__ = [
    "FLUSH_BITS",
    "KNOWN_SITES",
    "LIBRARIES",
    "POOL_THREAD_PREFIXES",
    "SEQUENCE_LENGTH",
    "KeepReport",
    "ModeWrite",
    "calling_thread_flushes",
    "find_mode_writes",
    "keep_subnormals",
    "pool_threads",
    "set_flush_denormal",
    "supported",
]

logger = logging.getLogger(__name__)

#: MXCSR's flush-to-zero (0x8000) and denormals-are-zero (0x0040) bits
FLUSH_BITS = 0x8040
#: the MindSpore libraries whose code writes them (``objdump -d``: the only ``ldmxcsr`` of MindSpore 2.7.1)
LIBRARIES = ("libmindspore_core.so", "libmindspore_ops_cpu.so")
#: how MindSpore names its pool threads (``pthread_setname_np`` in the functions that set the bits)
POOL_THREAD_PREFIXES = ("KernelThread_", "ActorThread_", "ParallelThread_")

# stmxcsr d(%rsp); or/and $imm32, d(%rsp); ldmxcsr d(%rsp); stmxcsr d(%rsp); or/and $imm8, d(%rsp); ldmxcsr d(%rsp)
_SEQUENCE = re.compile(
    rb"\x0f\xae\x5c\x24(?P<d>.)(?P<ftz>\x81(?P<op1>[\x4c\x64])\x24(?P=d)(?P<imm1>.{4}))\x0f\xae\x54\x24(?P=d)"
    rb"\x0f\xae\x5c\x24(?P=d)(?P<daz>\x83(?P<op2>[\x4c\x64])\x24(?P=d)(?P<imm2>.))\x0f\xae\x54\x24(?P=d)",
    re.DOTALL)
_OR, _AND = 0x4C, 0x64
#: (opcode, immediate) -> what the instruction does to its bit; the identity is what keep_subnormals writes
_FTZ = {(_OR, 0x8000): "set", (_AND, 0xFFFF7FFF): "clear", (_OR, 0): "neutral", (_AND, 0xFFFFFFFF): "neutral"}
_DAZ = {(_OR, 0x40): "set", (_AND, 0xBF): "clear", (_OR, 0): "neutral", (_AND, 0xFF): "neutral"}
_IDENTITY = {_OR: (0, 0), _AND: (0xFFFFFFFF, 0xFF)}
#: a sequence's length (the pattern above: 5 + 8 + 5 + 5 + 5 + 5 bytes)
SEQUENCE_LENGTH = 33
#: (library, file size) -> the file offsets of its sequences, for the pinned MindSpore 2.7.1 (x86_64 wheel): each is
#: checked byte for byte before it is written; a library whose size or bytes differ is searched whole (its code is
#: 11 MB and 72 MB: reading all of it took 0.05 s and 0.5 s here)
KNOWN_SITES: Mapping[tuple[str, int], tuple[int, ...]] = MappingProxyType({
    ("libmindspore_core.so", 12205880): (0x6846A9, 0x6873A8, 0x689676),
    ("libmindspore_ops_cpu.so", 73005144): (0x2568DAD, 0x2568E65),
})


@dataclass(frozen=True)
class ModeWrite:
    """One place in a library's code that writes MXCSR's flush bits.

    Attributes:
        library: the library's file name.
        address: where the sequence starts (in the process, or in the bytes given to :func:`find_mode_writes`).
        action: ``"set"`` (switches both bits on), ``"clear"`` (off) or ``"neutral"`` (already made the identity).
        ftz_immediate: where the 4-byte immediate of the flush-to-zero instruction is.
        daz_immediate: where the 1-byte immediate of the denormals-are-zero instruction is.
        opcode: ``0x4c`` for ``or``, ``0x64`` for ``and`` (both instructions use the same one).
    """

    library: str
    address: int
    action: str
    ftz_immediate: int
    daz_immediate: int
    opcode: int


@dataclass(frozen=True)
class KeepReport:
    """What :func:`keep_subnormals` did.

    Attributes:
        libraries: the MindSpore libraries it read (loaded ones of :data:`LIBRARIES`).
        changed: the writes it made the identity now.
        already: the writes an earlier call made the identity.
        early_threads: MindSpore pool threads that were already running (they keep the bits they set).
        reason: why nothing could be done, or ``""``.
    """

    libraries: tuple[str, ...]
    changed: tuple[ModeWrite, ...]
    already: tuple[ModeWrite, ...]
    early_threads: tuple[str, ...]
    reason: str = ""

    @property
    def kept(self) -> bool:
        """True when every write found is the identity, there was one, and no pool thread started before."""
        return bool(self.changed or self.already) and not self.early_threads and not self.reason

    def describe(self) -> str:
        """One line for the log: what was changed, or why subnormals may still be flushed."""
        if self.reason:
            return f"subnormals may be flushed to zero: {self.reason}"
        done = f"{len(self.changed) + len(self.already)} MXCSR writes of {', '.join(self.libraries)} made the identity"
        if self.early_threads:
            return (f"{done}, but MindSpore's pool threads {', '.join(self.early_threads)} started before and flush "
                    "subnormals to zero: import mindspeed_ms.adaptor before running any MindSpore op")
        return done


def supported() -> bool:
    """True on x86_64 Linux with glibc's ``fegetenv`` (the MXCSR this module reads and writes)."""
    return platform.machine() in ("x86_64", "AMD64") and _libm() is not None


class _FEnv(ctypes.Structure):
    # glibc's x86_64 fenv_t: the x87 environment (28 bytes), then MXCSR
    _fields_ = [("x87", ctypes.c_uint8 * 28), ("mxcsr", ctypes.c_uint32)]


_LIBM: list[ctypes.CDLL | None] = []


def _libm() -> ctypes.CDLL | None:
    if not _LIBM:
        try:
            _LIBM.append(ctypes.CDLL("libm.so.6"))
        except OSError:
            _LIBM.append(None)
    return _LIBM[0]


def _mxcsr() -> int:
    libm = _libm()
    assert libm is not None
    env = _FEnv()
    if libm.fegetenv(ctypes.byref(env)) != 0:  # pragma: no cover - glibc's fegetenv cannot fail on x86_64
        raise OSError("fegetenv failed")
    return int(env.mxcsr)


def _set_mxcsr(value: int) -> None:
    libm = _libm()
    assert libm is not None
    env = _FEnv()
    libm.fegetenv(ctypes.byref(env))
    env.mxcsr = value
    if libm.fesetenv(ctypes.byref(env)) != 0:  # pragma: no cover
        raise OSError("fesetenv failed")


def calling_thread_flushes() -> bool | None:
    """Return whether the calling thread flushes subnormals (either bit set), or None where it cannot be read."""
    return bool(_mxcsr() & FLUSH_BITS) if supported() else None


def set_flush_denormal(mode: bool, /) -> bool:
    """``torch.set_flush_denormal``: flush subnormals to zero on the calling thread (``mode``) or keep them.

    Args:
        mode: True to set flush-to-zero and denormals-are-zero, False to clear both.

    Returns:
        True when done (x86_64), False where the register is not there (nothing changes), as PyTorch.

    Raises:
        FlushDenormalModeError: ``mode`` is not a bool (ints and None too: PyTorch's RuntimeError and message).
    """
    if not isinstance(mode, bool):
        raise FlushDenormalModeError(type(mode).__name__)
    if not supported():
        return False
    current = _mxcsr()
    _set_mxcsr(current | FLUSH_BITS if mode else current & ~FLUSH_BITS)
    return True


def find_mode_writes(code: bytes, base: int = 0, library: str = "") -> list[ModeWrite]:
    """Find the instruction sequences that write MXCSR's flush bits in ``code`` (see the module's docstring).

    Args:
        code: machine code (x86_64).
        base: the address of ``code[0]``.
        library: the name recorded in each :class:`ModeWrite`.

    Returns:
        Each sequence whose two immediates are known (set, clear or the identity), in order; others are left out.
    """
    found = []
    for match in _SEQUENCE.finditer(code):
        op1, op2 = match["op1"][0], match["op2"][0]
        ftz = _FTZ.get((op1, int.from_bytes(match["imm1"], "little")))
        daz = _DAZ.get((op2, match["imm2"][0]))
        if op1 != op2 or ftz is None or ftz != daz:
            continue
        found.append(ModeWrite(library, base + match.start(), ftz, base + match.start("imm1"),
                               base + match.start("imm2"), op1))
    return found


def pool_threads() -> tuple[str, ...]:
    """Return the names of MindSpore's running pool threads (``/proc/self/task/*/comm``)."""
    names = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return ()
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as file:
                name = file.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if name.startswith(POOL_THREAD_PREFIXES):
            names.append(name)
    return tuple(sorted(names))


def _code_mappings() -> list[tuple[int, int, int, str]]:
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[1].startswith("r-x") and os.path.basename(fields[5]) in LIBRARIES:
                start, end = (int(part, 16) for part in fields[0].split("-"))
                found.append((start, end, int(fields[2], 16), fields[5]))
    return found


def _known_writes(start: int, end: int, offset: int, path: str) -> list[ModeWrite] | None:
    name = os.path.basename(path)
    try:
        sites = KNOWN_SITES.get((name, os.path.getsize(path)))
    except OSError:
        return None
    if sites is None:
        return None
    writes = []
    for site in sites:
        address = start + site - offset
        if not start <= address <= end - SEQUENCE_LENGTH:
            return None
        found = find_mode_writes(ctypes.string_at(address, SEQUENCE_LENGTH), address, name)
        if len(found) != 1 or found[0].address != address:
            return None
        writes.extend(found)
    return writes


def _mode_writes(start: int, end: int, offset: int, path: str) -> list[ModeWrite]:
    known = _known_writes(start, end, offset, path)
    if known is not None:
        return known
    return find_mode_writes(ctypes.string_at(start, end - start), start, os.path.basename(path))


_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4


def _write_code(address: int, data: bytes) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    page = os.sysconf("SC_PAGE_SIZE")
    start = address & ~(page - 1)
    length = (address + len(data) - start + page - 1) & ~(page - 1)
    if libc.mprotect(start, length, _PROT_READ | _PROT_WRITE | _PROT_EXEC) != 0:
        raise OSError(ctypes.get_errno(), f"mprotect of MindSpore's code at {address:#x} refused")
    try:
        ctypes.memmove(address, data, len(data))
    finally:
        libc.mprotect(start, length, _PROT_READ | _PROT_EXEC)


def keep_subnormals() -> KeepReport:
    """Make MindSpore's MXCSR writes the identity, so that its threads keep subnormals (the module's docstring).

    Call it after MindSpore is imported, before its first op. Safe to call again (it finds its own changes).

    Returns:
        What was changed and what could not be.
    """
    early = pool_threads()
    if not supported():
        return KeepReport((), (), (), early, f"not an x86_64 glibc system ({platform.machine()})")
    mappings = _code_mappings()
    libraries = tuple(sorted({os.path.basename(path) for *_, path in mappings}))
    if not mappings:
        return KeepReport((), (), (), early, f"none of {', '.join(LIBRARIES)} is loaded (import mindspore first)")
    changed, already = [], []
    try:
        for start, end, offset, path in mappings:
            for write in _mode_writes(start, end, offset, path):
                if write.action == "neutral":
                    already.append(write)
                    continue
                ftz, daz = _IDENTITY[write.opcode]
                _write_code(write.ftz_immediate, ftz.to_bytes(4, "little"))
                _write_code(write.daz_immediate, bytes([daz]))
                changed.append(write)
    except OSError as exc:
        return KeepReport(libraries, tuple(changed), tuple(already), early, str(exc))
    if not changed and not already:
        return KeepReport(libraries, (), (), early, f"no MXCSR write found in {', '.join(libraries)} (another build?)")
    return KeepReport(libraries, tuple(changed), tuple(already), early)
