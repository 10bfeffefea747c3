"""Import the real MindSpeed-LLM in MindSpore mode on mindspeed_ms and report what its flow did (see the .sh).

``import mindspeed_llm`` runs MindSpeed-LLM's whole ``FeatureAdaptor.execute()``: MindSpeed's feature manager
hands ``mindspeed.patch_utils.MindSpeedPatchesManager`` (adopted: ours) to every feature, MindSpeed-LLM's
MindSpore feature calls ``mindspore_adaptation(...)``, and ``apply_patches()`` ends it. Then each target
registered through MindSpeed's manager is checked statically (``mindspeed-ms verify --static``'s resolver).

Usage: real_mindspeed_llm_check.py STATUS_JSON
"""

from __future__ import annotations

import collections
import json
import sys
import traceback

status_file = sys.argv[1]
sys.argv = [sys.argv[0], "--ai-framework", "mindspore"]  # what the training script would be given

import mindspeed_ms.adaptor  # noqa: E402,F401  (MindSpore mode: MSAdapter, providers, adoption armed)
from mindspeed_ms import MindSporeAdaptation  # noqa: E402
from mindspeed_ms.adaptation import default_registry  # noqa: E402
from mindspeed_ms.adaptation.verify import check_target, static_resolver  # noqa: E402
from mindspeed_ms.patch_manager.manager import DEFAULT_MANAGER_NAME  # noqa: E402

ours = {status.target for status in MindSporeAdaptation.status()}
outcome = "completed"
try:
    import mindspeed_llm  # noqa: F401  (runs the feature flow, apply_patches() included)
except Exception as error:  # report where the flow stopped, then what was registered up to there
    where = traceback.extract_tb(error.__traceback__)[-1]
    outcome = f"stopped: {type(error).__name__}: {str(error).splitlines()[0]} ({where.filename}:{where.lineno})"

import mindspeed.patch_utils as patch_utils  # noqa: E402

statuses = MindSporeAdaptation.status()
theirs = [s for s in statuses if s.provider == DEFAULT_MANAGER_NAME or s.target not in ours]
print(f"mindspeed.patch_utils.MindSpeedPatchesManager is ours: "
      f"{patch_utils.MindSpeedPatchesManager.register_patch.__module__.startswith('mindspeed_ms')}")
print(f"flow: {outcome}")
print(f"targets registered through MindSpeed's manager: {len(theirs)}, by state: "
      f"{dict(collections.Counter(s.state for s in theirs))}")
for status in theirs:
    if status.state not in ("applied", "pending-import"):
        print(f"  {status.state}: {status.target}: {status.reason}")
superseded = [s for s in statuses if s.superseded]
print(f"built-in fixes superseded by theirs: {len(superseded)}")
for status in superseded:
    print(f"  {status.target}: {status.replacement} (ours waits: {status.superseded[0].split(' (')[0]})")
resolver = static_resolver()
static = collections.Counter()
records = {patch.target: patch for patch in default_registry().patches()}
for status in theirs:
    check = check_target(records[status.target], static=True, resolver=resolver)
    static[check.state] += 1
    if check.state not in ("ok", "stub"):
        print(f"  verify --static {check.state}: {status.target}: {check.reason}")
print(f"verify --static of their targets: {dict(static)}")
print(f"summary: {default_registry().report().summary()}")
with open(status_file, "w") as handle:
    json.dump([s.to_dict() for s in statuses], handle, indent=1, default=str)
sys.exit(0 if outcome == "completed" else 1)
