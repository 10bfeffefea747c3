"""Run examples/pretrain_gpt.py's ``main()`` once per layout, one after the other, in the same launcher workers.

``python layouts.py RUNS.json --ai-framework mindspore`` under msrun (or torchrun): RUNS.json holds a list of
``[name, [argument, ...]]``; every worker runs each layout's ``main(arguments)`` in order; rank 0 prints
``=== layout NAME`` before it and ``=== layout NAME finished`` after it (only rank 0: torchrun interleaves its
workers' outputs). The process group is joined once (by the first ``main()``); megatron's model-parallel
groups are built by each ``main()`` and torn down after it, and megatron's parallel state is reset to what a
fresh process has, so each layout starts from what a fresh launch would have: its own groups, seeds, model,
optimizer and batches. Tests use it to pay a launch's start (the launcher, MindSpore's scheduler and every
worker importing MindSpore, MSAdapter and megatron-core: ~20-30 s on two cores) once for several layouts.
"""

import mindspeed_ms.adaptor  # noqa: F401  (first import: --ai-framework on this command line selects the backend)

# isort: split
import copy
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import pretrain_gpt  # noqa: E402
from megatron.core import parallel_state  # noqa: E402

#: megatron's parallel state as a fresh process has it (destroy_model_parallel() leaves some of it set, e.g. the
#: embedding groups' ranks, which a later layout with another pipeline split would take as its own)
FRESH = {name: copy.copy(value) for name, value in vars(parallel_state).items()
         if name.startswith("_") and name.isupper() and isinstance(value, (type(None), bool, int, list, dict))}


def sizes() -> dict[str, int]:
    """The parallel sizes megatron's state reports once a layout's main() has built its groups."""
    return {"tp": parallel_state.get_tensor_model_parallel_world_size(),
            "pp": parallel_state.get_pipeline_model_parallel_world_size(),
            "dp": parallel_state.get_data_parallel_world_size(),
            "ep": parallel_state.get_expert_model_parallel_world_size()}


def main() -> None:
    rank0 = os.environ.get("RANK", os.environ.get("RANK_ID", "0")) == "0"  # torchrun's RANK, msrun's RANK_ID
    framework = sys.argv[sys.argv.index("--ai-framework") + 1] if "--ai-framework" in sys.argv else "pytorch"
    build_groups = parallel_state.initialize_model_parallel

    def initialize_model_parallel(*args, **kwargs):
        build_groups(*args, **kwargs)
        if rank0:
            print(f"=== sizes {json.dumps(sizes())}", flush=True)

    parallel_state.initialize_model_parallel = initialize_model_parallel  # what pretrain_gpt calls (module attr)
    for name, arguments in json.loads(Path(sys.argv[1]).read_text()):
        if rank0:
            print(f"=== layout {name}", flush=True)
        pretrain_gpt.main([*arguments, "--ai-framework", framework])
        parallel_state.destroy_model_parallel()
        for variable, value in FRESH.items():
            setattr(parallel_state, variable, copy.copy(value))
        if rank0:
            print(f"=== layout {name} finished", flush=True)


if __name__ == "__main__":
    main()
