"""A MindSpeed-LLM-style downstream ported to mindspeed_ms, proven on the stand-ins in tests/fakes.

``tests/fakes/mindspeed_llm/mindspore/mindspore_adaptor_v2.py`` has the shapes of MindSpeed-LLM's
MindSpore adaptation (a ``MindSpeedPatchesManager`` subclass overriding ``register_patch`` as a
staticmethod, ``check_patch``, eager imports of replacements from modules that import torch,
typed-flag gates, an early ``patches_info[t].apply_patch()``, ``clear_wrapper_v2``, nested classes,
staticmethods, a name-mangled method, ``create_dummy``, a module and a class as replacements).
It runs, in a subprocess each (MSAdapter provides ``torch``):

* (a) with its two ``mindspeed.patch_utils`` import lines pointed at :mod:`mindspeed_ms.patch_manager`,
  as a mindspeed_ms provider declaring its flags (``register_args``);
* (b) unchanged, through MindSpeed's feature flow, with mindspeed_ms adopting ``mindspeed.patch_utils``;
* (c) unchanged on the stand-in MindSpeed manager alone (MindSpeed's behaviour), for comparison.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _helpers import FAKES, run_python, subprocess_env

from mindspeed_ms.testing import write_distribution

FLAGS = ["--ai-framework", "mindspore", "--enable-a2avc", "0", "--enable-seq1f1b", "--seq1f1b-splits", "4",
         "--enable-share-memory", "--reuse-fp32-param", "--swap-optimizer"]
#: Targets where MindSpeed's manager is at fault, so its bindings are not the reference:
#: parse_path looks the attribute up on the outer class of a nested one and fails.
MINDSPEED_FAULTS = {
    "mindspeed_llm.core.models.rotary_pos_embedding.YarnRotaryPositionEmbedding.Scaling.yarn_linear_ramp_mask",
}

# Imports every target and describes what it is bound to: the chain of functions through __wrapped__
# (by code object, which functools.wraps does not copy), a class's or module's name.
DESCRIBE = textwrap.dedent("""
    import importlib, inspect, json, re, sys, types

    def _resolve(target):
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                value = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for name in parts[cut:]:
                value = getattr(value, name)
            return value
        raise LookupError(target)

    def describe(value):
        if isinstance(value, types.ModuleType):
            return ["module " + value.__name__]
        if isinstance(value, type):
            return ["class " + value.__module__ + "." + value.__qualname__ + " " + str(getattr(value, "origin", ""))]
        chain = []
        while value is not None:
            code = getattr(value, "__code__", None)
            where = re.sub(r".*/(?=(mindspeed|mindspeed_llm)/)", "", code.co_filename) if code else ""
            chain.append(where + ":" + code.co_qualname if code else repr(value))
            value = getattr(value, "__wrapped__", None)
        return chain

    def bindings(targets):
        found = {}
        for target in targets:
            try:
                found[target] = describe(_resolve(target))
            except (LookupError, AttributeError):
                found[target] = ["<absent>"]
        return found
""")

OURS_REPORT = textwrap.dedent("""
    from mindspeed_ms.adaptation import default_registry
    from mindspeed_ms.adaptation.verify import verify_registry
    registry = default_registry()
    mine = [p.target for p in registry.patches() if any(owner in PROVIDERS for _, owner in p.sites)]
    bound = bindings(mine)
    import mindspeed_llm.core.pipeline_parallel.p2p_communication as p2p
    alias = describe(p2p.deallocate_output_tensor)
    states = {s.target: s.state for s in registry.status() if s.target in mine}
    shared = {p.target: sorted({owner for _, owner in p.sites if owner}) for p in registry.patches()
              if len({owner for _, owner in p.sites}) > 1}
    static = {c.target: c.state for c in verify_registry(registry, static=True) if c.target in states}
    sites = sorted({s.registered_at.rsplit("/", 1)[-1].split(":")[0] for s in registry.status()
                    if s.target in mine and s.provider in PROVIDERS})
    patch_utils = sys.modules.get("mindspeed.patch_utils")
    adopted = patch_utils.MindSpeedPatchesManager.register_patch.__module__ if patch_utils else None
    snapshot = {t: bound[t] for t in bound}
    registry.revert()
    reverted = bindings(mine)
    print(json.dumps({"states": states, "bindings": snapshot, "static": static, "sites": sites,
                      "adopted": adopted, "reverted": reverted, "shared": shared,
                      "alias": alias, "reverted_alias": describe(p2p.deallocate_output_tensor)}))
""")


def _run(script: str, *argv: str, pythonpath: list[Path], **env: str) -> dict[str, Any]:
    environ = subprocess_env(drop=("MINDSPEED_AI_FRAMEWORK",),
                             PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath), **env)
    return json.loads(run_python(sys.executable, "-c", script, *argv, env=environ, timeout=300).splitlines()[-1])


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """(c): the stand-in MindSpeed manager alone; each patch applied on its own (a failing one is recorded)."""
    script = "import msadapter\n" + DESCRIBE + textwrap.dedent("""
        from mindspeed.patch_utils import MindSpeedPatchesManager
        from mindspeed_llm.features_manager import FEATURES
        from mindspeed.features_manager.features_manager import MindSpeedFeaturesManager
        args = MindSpeedFeaturesManager.parse_args(FEATURES)
        MindSpeedFeaturesManager.register_features_patches(FEATURES, args)
        failed = {}
        for target, patch in MindSpeedPatchesManager.patches_info.items():
            try:
                patch.apply_patch()
            except Exception as error:
                failed[target] = type(error).__name__
        ok = [t for t in MindSpeedPatchesManager.patches_info if t not in failed]
        print(json.dumps({"bindings": bindings(ok), "failed": failed}))
    """)
    return _run(script, *FLAGS, pythonpath=[FAKES])


@pytest.fixture(scope="module")
def adopted() -> dict[str, Any]:
    """(b): unchanged downstream, mindspeed_ms adopting ``mindspeed.patch_utils``."""
    script = "import mindspeed_ms.adaptor\nimport sys\n" + DESCRIBE + textwrap.dedent("""
        PROVIDERS = {"mindspeed.patch_utils"}
        from mindspeed_llm.features_manager import patch_features
        patch_features()
    """) + OURS_REPORT
    return _run(script, *FLAGS, pythonpath=[FAKES])


@pytest.fixture(scope="module")
def ported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """(a): the downstream's two import lines pointed at mindspeed_ms, run as a provider; adoption off."""
    root = tmp_path_factory.mktemp("ported")
    shutil.copytree(FAKES / "mindspeed_llm", root / "mindspeed_llm")
    edited = 0
    for path in (root / "mindspeed_llm" / "mindspore").glob("*.py"):
        text = path.read_text()
        if "from mindspeed.patch_utils import" in text:
            path.write_text(text.replace("from mindspeed.patch_utils import", "from mindspeed_ms.patch_manager import"))
            edited += 1
    assert edited == 2  # mindspore_adaptor_v2.py and utils.py, as in the real MindSpeed-LLM
    write_distribution(root, "llm-port", entry_points={"mindspeed_llm": "llm_port_provider"}, modules={
        "llm_port_provider.py": textwrap.dedent("""
            name = "mindspeed_llm"

            def register_args(parser):
                from mindspeed_llm.mindspore.mindspore_adaptor_v2 import mindspore_register_args
                mindspore_register_args(parser)

            def register(registry, args):
                from mindspeed.features_manager.recompute import RecomputeFeature
                from mindspeed_ms.patch_manager import MindSpeedPatchesManager
                from mindspeed_llm.mindspore.mindspore_adaptor_v2 import mindspore_adaptation
                RecomputeFeature().register_patches(MindSpeedPatchesManager, args)
                mindspore_adaptation(MindSpeedPatchesManager, args)
        """)})
    script = "import mindspeed_ms.adaptor\nimport sys\n" + DESCRIBE + 'PROVIDERS = {"mindspeed_llm"}\n' + OURS_REPORT
    return _run(script, *FLAGS, pythonpath=[root, FAKES], MINDSPEED_MS_ADOPT_MINDSPEED="0")


def test_adoption_swaps_mindspeeds_manager_and_every_target_is_applied(adopted: dict[str, Any]) -> None:
    assert adopted["adopted"] == "mindspeed_ms.patch_manager.manager"
    assert len(adopted["states"]) >= 30
    assert set(adopted["states"].values()) == {"applied"}
    assert set(adopted["static"].values()) <= {"ok", "stub"}
    # registrations are attributed to the downstream's lines, not to the forwarding register_patch
    # (recompute.py's PyTorch wrappers were cleared by clear_wrapper_v2, so no site of it is left)
    assert adopted["sites"] == ["mindspore_adaptor_v2.py"]


def test_a_target_both_ours_and_theirs_shows_both_registrations(adopted: dict[str, Any]) -> None:
    # the built-in `mindspeed` provider and MindSpeed-LLM (force_patch=True) patch the same op: one
    # record, both registrations visible, the later forced one installed
    target = "mindspeed.ops.npu_rotary_position_embedding.npu_rotary_position_embedding"
    assert adopted["shared"][target] == ["mindspeed", "mindspeed.patch_utils"]
    assert adopted["bindings"][target] == ["mindspeed/mindspore/ops/npu_rotary_position_embedding.py:"
                                           "npu_rotary_position_embedding"]


def test_revert_is_exact(adopted: dict[str, Any]) -> None:
    for target, chain in adopted["reverted"].items():
        if target.startswith("fused_weight_gradient_mlp_cuda"):
            assert chain == ["<absent>"]  # created on purpose (create_dummy): gone after revert
            continue
        assert all("/mindspore/" not in link and "features_manager" not in link for link in chain), target


def test_adopted_bindings_equal_mindspeeds_where_mindspeed_is_not_at_fault(adopted: dict[str, Any],
                                                                          reference: dict[str, Any]) -> None:
    assert set(reference["failed"]) == MINDSPEED_FAULTS
    ours = adopted["bindings"]
    assert set(ours) == set(reference["bindings"]) | MINDSPEED_FAULTS
    different = {t: (ours[t], reference["bindings"][t]) for t in reference["bindings"]
                 if ours[t] != reference["bindings"][t]}
    assert different == {}
    # MindSpore replacements really went in, wrappers stacked in MindSpeed's order
    assert ours["mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.forward"][0].endswith(
        "checkpoint_forward_wrapper.<locals>.wrapper")
    assert "mindspeed/features_manager/recompute.py" not in " ".join(
        ours["mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.forward"])  # cleared by clear_wrapper_v2
    assert adopted["alias"] == ours["mindspeed_llm.core.pipeline_parallel.schedules.deallocate_output_tensor"]
    assert adopted["reverted_alias"] == ["mindspeed_llm/core/pipeline_parallel/schedules.py:deallocate_output_tensor"]


def test_nested_class_target_works_on_our_engine(adopted: dict[str, Any]) -> None:
    [target] = MINDSPEED_FAULTS
    assert adopted["states"][target] == "applied"
    assert adopted["bindings"][target] == ["mindspeed_llm/mindspore/core/models/rotary_pos_embedding.py:"
                                           "yarn_linear_ramp_mask"]


def test_import_line_port_runs_as_a_provider_with_typed_flags(ported: dict[str, Any],
                                                              adopted: dict[str, Any]) -> None:
    assert ported["adopted"] is None  # never imported: the port does not need mindspeed.patch_utils
    assert set(ported["states"].values()) == {"applied"}
    assert set(ported["static"].values()) <= {"ok", "stub"}
    assert ported["bindings"] == adopted["bindings"]


@pytest.mark.parametrize(("framework", "adopt", "expected"), [
    ("pytorch", "1", "mindspeed_ms.patch_manager.manager"),
    ("pytorch", None, "mindspeed.patch_utils"),
    ("mindspore", "0", "mindspeed.patch_utils"),
])
def test_adoption_switch(framework: str, adopt: str | None, expected: str) -> None:
    script = textwrap.dedent("""
        import json, sys
        import mindspeed_ms.adaptor
        from mindspeed.patch_utils import MindSpeedPatchesManager
        print(json.dumps({"manager": MindSpeedPatchesManager.register_patch.__module__}))
    """)
    env = {"MINDSPEED_MS_ADOPT_MINDSPEED": adopt} if adopt is not None else {}
    assert _run(script, "--ai-framework", framework, pythonpath=[FAKES], **env)["manager"] == expected
