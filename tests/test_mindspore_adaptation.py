"""mindspeed_ms.adaptation.mindspore_adaptation: MindSpeed-LLM's ``MindSporeAdaptation.register`` calls port unchanged.

The calls below have the shape of MindSpeed-LLM's ``mindspeed_llm/mindspore/mindspore_adaptor.py``
(targets from there, replacement names as there; the replacements themselves are local stand-ins,
since MindSpeed cannot be installed here). What behaves differently is shown too: typos are errors
instead of silently created attributes, application is lazy (nothing is imported to register), and
revert is exact.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers import builtin_providers, subprocess_env

from mindspeed_ms.adaptation import Adaptation, MindSporeAdaptation, Settings, replace_default_adaptation
from mindspeed_ms.adaptation.verify import verify_registry

# -- stand-ins for MindSpeed-LLM's replacement functions (names and signatures as there) ------------


def _set_cuda_rng_state(new_state: Any, device: int = -1, graph_safe: bool = False) -> None:
    """Plays mindspeed.mindspore.core.tensor_parallel.random.local_set_cuda_rng_state."""


local_set_cuda_rng_state = _set_cuda_rng_state


def moe_layer_init_wrapper(fn: Any) -> Any:
    """A wrapper: MindSpeed's naming rule makes it a wrap, here too."""
    return fn


def moe_layer_forward(self: Any, hidden_states: Any) -> Any:
    return hidden_states


def distributed_data_parallel_init_with_cp(self: Any, *args: Any, **kwargs: Any) -> None:
    pass


def distributed_data_parallel_init(self: Any, *args: Any, **kwargs: Any) -> None:
    pass


def local_rotate_half(x: Any, rotary_interleaved: bool = False) -> Any:
    return x


def calculate_predicted_logits(vocab_parallel_logits: Any, target: Any, logits_max: Any, vocab_start_index: Any,
                               vocab_end_index: Any) -> Any:
    return vocab_parallel_logits


def get_rotary_seq_len(self: Any, *args: Any, **kwargs: Any) -> int:
    return 0


def matmul_all_reduce(*args: Any, **kwargs: Any) -> Any:
    return None


def mindspeed_llm_style_execute(args: Any) -> None:
    """The body of MindSpeed-LLM's MindSporeAdaptation.execute(), register calls unchanged."""
    MindSporeAdaptation.register('megatron.core.distributed.distributed_data_parallel.DistributedDataParallel.__init__',
                                 distributed_data_parallel_init_with_cp)
    MindSporeAdaptation.register('megatron.core.transformer.moe.moe_layer.MoELayer.__init__',
                                 moe_layer_init_wrapper)
    MindSporeAdaptation.register('megatron.core.transformer.moe.moe_layer.MoELayer.forward', moe_layer_forward)
    MindSporeAdaptation.register('megatron.core.distributed.distributed_data_parallel.DistributedDataParallel.__init__',
                                 distributed_data_parallel_init)
    MindSporeAdaptation.register('megatron.core.models.common.embeddings.rotary_pos_embedding.RotaryEmbedding.'
                                 'get_rotary_seq_len', get_rotary_seq_len)
    MindSporeAdaptation.register('megatron.core.models.common.embeddings._rotate_half', local_rotate_half)
    MindSporeAdaptation.register('megatron.core.tensor_parallel.random._set_cuda_rng_state', local_set_cuda_rng_state)
    MindSporeAdaptation.register(
        'megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.calculate_predicted_logits',
        calculate_predicted_logits)
    if getattr(args, "use_ascend_coc", False):
        MindSporeAdaptation.register('mindspeed.ops.lcal_functional.CoCOperations.matmul_all_reduce',
                                     matmul_all_reduce)


@pytest.fixture()
def fresh_default() -> Iterator[None]:
    """Make a fresh Adaptation the default one (MindSporeAdaptation's) for the test; close it afterwards."""
    mine = Adaptation(settings=Settings())
    previous = replace_default_adaptation(mine)
    yield
    mine.close()
    replace_default_adaptation(previous)


def test_mindspeed_llm_register_calls_run_unchanged_and_import_nothing(fresh_default: None) -> None:
    before = {name for name in sys.modules if name.startswith(("megatron", "mindspeed."))}
    mindspeed_llm_style_execute(type("Args", (), {"use_ascend_coc": True})())
    assert {name for name in sys.modules if name.startswith(("megatron", "mindspeed."))} == before
    statuses = MindSporeAdaptation.status()
    assert len(statuses) == 8
    assert {s.state for s in statuses} == {"registered"}
    # force_patch=True is the default, as in MindSpeed-LLM: the second DDP __init__ replaces the first.
    ddp = next(s for s in MindSporeAdaptation.status() if s.target.endswith("DistributedDataParallel.__init__"))
    assert ddp.replacement == f"{__name__}.distributed_data_parallel_init"
    assert len(ddp.sources) == 2
    moe_init = next(s for s in MindSporeAdaptation.status() if s.target.endswith("MoELayer.__init__"))
    assert moe_init.kinds == ("wrap",)  # a name ending in "wrapper" wraps, as in MindSpeed
    assert all(s.registered_at.startswith(__file__) for s in MindSporeAdaptation.status())


def test_typos_and_vanished_targets_are_reported_not_created(fresh_default: None) -> None:
    mindspeed_llm_style_execute(type("Args", (), {"use_ascend_coc": True})())
    checks = {check.target: check for check in verify_registry(MindSporeAdaptation.registry(), static=True)}
    # MindSpeed would silently create this attribute; megatron-core 0.12.1 has no such name there.
    rotate = checks["megatron.core.models.common.embeddings._rotate_half"]
    assert rotate.state == "missing"
    assert "'_rotate_half'" in (rotate.reason or "")
    assert checks["mindspeed.ops.lcal_functional.CoCOperations.matmul_all_reduce"].state == "missing"
    resolved = [target for target, check in checks.items() if check.state == "ok"]
    assert len(resolved) == 6
    assert "megatron.core.tensor_parallel.random._set_cuda_rng_state" in resolved


def test_application_is_lazy_and_revert_is_exact_on_real_megatron(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        import mindspeed_ms.adaptor
        from mindspeed_ms.adaptor import MindSporeAdaptation
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_mindspore_adaptation import mindspeed_llm_style_execute, local_set_cuda_rng_state
        MindSporeAdaptation.registry().block("transformer_engine")
        mindspeed_llm_style_execute(MindSporeAdaptation.get_args())
        report = MindSporeAdaptation.apply()
        pending = report.pending
        import megatron.core.tensor_parallel.random as random_module
        import megatron.core.models.common.embeddings as embeddings
        patched = random_module._set_cuda_rng_state is local_set_cuda_rng_state
        states = {{s.target.rpartition(".")[2]: [s.state, s.reason] for s in MindSporeAdaptation.status()}}
        MindSporeAdaptation.revert()
        restored = random_module._set_cuda_rng_state
        print(json.dumps({{"pending": pending, "patched": patched, "states": states,
                          "created": hasattr(embeddings, "_rotate_half"),
                          "restored": [restored.__module__, restored.__code__.co_filename]}}))
    """))
    env = subprocess_env(drop=("MINDSPEED_",), MINDSPEED_MS_DISABLE=",".join(builtin_providers()))
    completed = subprocess.run([sys.executable, str(script), "--ai-framework", "mindspore"], env=env,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    import json

    data = json.loads(completed.stdout.strip().splitlines()[-1])
    assert data["pending"] == 7  # nothing of megatron was imported to register or apply
    assert data["patched"] is True
    assert data["states"]["_set_cuda_rng_state"][0] == "applied"
    assert data["states"]["_rotate_half"][0] == "failed"
    assert "'_rotate_half'" in data["states"]["_rotate_half"][1]
    assert data["created"] is False
    assert data["restored"][0] == "megatron.core.tensor_parallel.random"
    assert data["restored"][1].endswith(os.path.join("megatron", "core", "tensor_parallel", "random.py"))
