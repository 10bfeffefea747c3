"""mindspeed_ms.compat.fp_mode: MindSpore's MXCSR writes made the identity (subnormals kept on its CPU threads, as
PyTorch keeps them), and ``torch.set_flush_denormal`` with PyTorch's per-thread semantics.

MindSpore runs in child interpreters (its pools, its libraries' code); the ops through the adaptor are compared
with PyTorch by tests/conformance/cases/ops_subnormal.py.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from _helpers import reference_python, result_line, run_python, subprocess_env

from mindspeed_ms.compat import fp_mode
from mindspeed_ms.compat.errors import FlushDenormalModeError

pytestmark = pytest.mark.skipif(not fp_mode.supported(), reason="MXCSR is x86_64's")

_SMALLEST = np.float32(1.401298464324817e-45)


def _sequence(displacement: int, first: bytes, second: bytes, op: int = 0x4C) -> bytes:
    d = bytes([displacement])
    stmxcsr, ldmxcsr = b"\x0f\xae\x5c\x24" + d, b"\x0f\xae\x54\x24" + d
    return (stmxcsr + b"\x81" + bytes([op]) + b"\x24" + d + first + ldmxcsr
            + stmxcsr + b"\x83" + bytes([op]) + b"\x24" + d + second + ldmxcsr)


def test_find_mode_writes_reads_set_clear_and_identity_sequences() -> None:
    set_ = _sequence(0x0C, (0x8000).to_bytes(4, "little"), b"\x40")
    clear = _sequence(0x1C, (0xFFFF7FFF).to_bytes(4, "little"), b"\xbf", op=0x64)
    neutral = _sequence(0x0C, bytes(4), b"\x00")
    code = b"\x90" * 3 + set_ + b"\xc3" + clear + neutral
    found = fp_mode.find_mode_writes(code, base=0x1000, library="libx.so")
    assert [(w.address, w.action, w.library) for w in found] == [
        (0x1003, "set", "libx.so"), (0x1003 + len(set_) + 1, "clear", "libx.so"),
        (0x1003 + 2 * len(set_) + 1, "neutral", "libx.so")]
    assert len(set_) == fp_mode.SEQUENCE_LENGTH
    assert found[0].ftz_immediate == 0x1003 + 9
    assert found[0].daz_immediate == 0x1003 + 9 + 4 + 5 + 5 + 4


def test_find_mode_writes_skips_other_slots_bits_and_mixed_operations() -> None:
    other_slot = bytearray(_sequence(0x0C, (0x8000).to_bytes(4, "little"), b"\x40"))
    other_slot[-1] = 0x10  # the last ldmxcsr reads another stack slot
    other_bits = _sequence(0x0C, (0x6000).to_bytes(4, "little"), b"\x40")  # rounding mode, not FTZ
    mixed = _sequence(0x0C, (0x8000).to_bytes(4, "little"), b"\xbf")  # sets FTZ, clears DAZ
    assert fp_mode.find_mode_writes(bytes(other_slot) + other_bits + mixed) == []


def test_the_installed_mindspore_has_exactly_the_known_sites() -> None:
    spec = importlib.util.find_spec("mindspore")
    assert spec is not None
    assert spec.submodule_search_locations
    library_dir = Path(spec.submodule_search_locations[0]) / "lib"
    for (name, size), sites in fp_mode.KNOWN_SITES.items():
        path = next(library_dir.rglob(name))
        assert path.stat().st_size == size, f"{path}: another build than the known sites were read from"
        found = fp_mode.find_mode_writes(path.read_bytes(), 0, name)
        assert tuple(write.address for write in found) == sites  # the text segment is mapped at file offset 0
        assert {write.action for write in found} <= {"set", "clear"}


def _flushes_here() -> bool:
    return bool(np.array([_SMALLEST]) * np.float32(1) == 0)


def test_set_flush_denormal_changes_the_calling_thread_and_threads_started_after() -> None:
    seen: dict[str, bool | None] = {}
    after = threading.Thread(target=lambda: seen.setdefault("started_after", fp_mode.calling_thread_flushes()))
    started = threading.Event()
    release = threading.Event()

    def early() -> None:
        started.set()
        release.wait(30)
        seen["started_before"] = fp_mode.calling_thread_flushes()

    early_thread = threading.Thread(target=early)
    early_thread.start()
    started.wait(30)
    try:
        assert fp_mode.set_flush_denormal(True) is True
        assert fp_mode.calling_thread_flushes() is True
        assert _flushes_here()
        after.start()  # created before the call, started after it: a thread's mode is copied when it starts
        after.join()
    finally:
        release.set()
        early_thread.join()
        assert fp_mode.set_flush_denormal(False) is True
    assert fp_mode.calling_thread_flushes() is False
    assert not _flushes_here()
    assert seen == {"started_after": True, "started_before": False}


_REFERENCE = """
import json, threading, numpy as np, torch
seen = {}
early_started, release = threading.Event(), threading.Event()
def early():
    early_started.set(); release.wait(30)
    seen["started_before"] = bool(np.array([np.float32(1.4e-45)]) * np.float32(1) == 0)
t = threading.Thread(target=early); t.start(); early_started.wait(30)
seen["returned"] = torch.set_flush_denormal(True)
seen["calling"] = bool(np.array([np.float32(1.4e-45)]) * np.float32(1) == 0)
after = threading.Thread(target=lambda: seen.setdefault(
    "started_after", bool(np.array([np.float32(1.4e-45)]) * np.float32(1) == 0)))
after.start(); after.join(); release.set(); t.join()
seen["off"] = torch.set_flush_denormal(False)
seen["calling_off"] = bool(np.array([np.float32(1.4e-45)]) * np.float32(1) == 0)
print("RESULT " + json.dumps(seen))
"""


def test_set_flush_denormal_has_pytorchs_thread_semantics() -> None:
    reference = result_line(run_python(reference_python(), "-c", _REFERENCE, env=subprocess_env(), timeout=300))
    assert reference == {"started_before": False, "returned": True, "calling": True, "started_after": True,
                         "off": True, "calling_off": False}
    # ours, the same script without torch: the same answers
    ours = _REFERENCE.replace("import json, threading, numpy as np, torch",
                              "import json, threading, numpy as np\n"
                              "from mindspeed_ms.compat.fp_mode import set_flush_denormal as _set\n"
                              "class torch:\n    set_flush_denormal = staticmethod(_set)")
    assert result_line(run_python(sys.executable, "-c", ours, env=subprocess_env())) == reference


@pytest.mark.parametrize("value", [1, 0, None, 0.5, "x"])
def test_set_flush_denormal_refuses_what_is_not_a_bool_as_pytorch(value: object) -> None:
    with pytest.raises(RuntimeError, match="flush_denormal expects a bool, but got") as raised:
        fp_mode.set_flush_denormal(value)  # type: ignore[arg-type]
    assert isinstance(raised.value, FlushDenormalModeError)
    assert raised.value.given == type(value).__name__
    assert fp_mode.calling_thread_flushes() is False


_MINDSPORE = """
import json, sys
import numpy as np
import mindspore
from mindspore import ops, Tensor
from mindspeed_ms.compat import fp_mode
first = sys.argv[1]
def flushes():
    x = Tensor(np.full(100000, 1.4e-45, np.float32))
    count = 0
    for _ in range(6):
        count += int((ops.mul(x, 1.0).asnumpy() == 0).any())
        count += int(np.isnan(ops.div(ops.zeros(100000, mindspore.float32), x).asnumpy()).any())
    return count
out = {}
if first == "op":
    out["flushes_before"] = flushes()
report = fp_mode.keep_subnormals()
out.update(kept=report.kept, changed=len(report.changed), already=len(report.already),
           early=list(report.early_threads), describe=report.describe())
again = fp_mode.keep_subnormals()
out.update(again_changed=len(again.changed), again_already=len(again.already))
out["flushes_after"] = flushes()
ops.LpNorm(axis=0, p=3)(Tensor(np.full(4, 1e-20, np.float32)))
out["calling_after_lpnorm"] = fp_mode.calling_thread_flushes()
out["pool"] = list(fp_mode.pool_threads())
print("RESULT " + json.dumps(out))
"""


def test_keep_subnormals_before_the_first_op_keeps_them_on_every_thread() -> None:
    out = result_line(run_python(sys.executable, "-c", _MINDSPORE, "keep", env=subprocess_env(drop=("MINDSPEED_",))))
    assert out["kept"] is True, out["describe"]
    assert (out["changed"], out["already"], out["early"]) == (5, 0, [])
    assert (out["again_changed"], out["again_already"]) == (0, 5)
    assert out["flushes_after"] == 0
    assert out["calling_after_lpnorm"] is False  # LpNorm set both bits on the thread that ran it
    assert out["pool"], "the ops ran on MindSpore's pool threads"


def test_pool_threads_started_before_flush_and_are_reported() -> None:
    out = result_line(run_python(sys.executable, "-c", _MINDSPORE, "op", env=subprocess_env(drop=("MINDSPEED_",))))
    assert out["flushes_before"] > 0  # MindSpore's own behaviour: what the tests above would catch
    assert out["kept"] is False
    assert out["early"], out
    assert "started before" in out["describe"]
    assert out["changed"] == 5


def test_the_adaptor_keeps_subnormals_on_cpu_and_the_switch_turns_it_off() -> None:
    script = ("import json, mindspeed_ms.adaptor, torch\n"
              "from mindspeed_ms.adaptation.runtime import subnormal_report\n"
              "x = torch.full((100000,), 1.4e-45)\n"
              "r = subnormal_report()\n"
              "print('RESULT ' + json.dumps({'report': None if r is None else r.kept, 'flushes': sum(\n"
              "    int(((x * 1) == 0).any()) for _ in range(6))}))\n")
    env = subprocess_env(drop=("MINDSPEED_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    assert result_line(run_python(sys.executable, "-c", script, env=env)) == {"report": True, "flushes": 0}
    off = result_line(run_python(sys.executable, "-c", script, env=dict(env, MINDSPEED_MS_KEEP_SUBNORMALS="0")))
    assert off["report"] is None
    assert off["flushes"] > 0  # MindSpore's behaviour (100000 elements: flushed in every run measured)
