"""Tests of mindspeed_ms.migrate.world_size: msrun's --worker_num as the script spells the world size."""

from __future__ import annotations

from mindspeed_ms.migrate.convert import ConvertOptions, convert_script

DEFAULTS = "--log_dir=msrun_log --join=False --cluster_time_out=300 --bind_core=True"


def convert(text: str) -> str:
    return convert_script(text.encode(), options=ConvertOptions()).output.decode()


def test_literal_worker_counts_multiply() -> None:
    out = convert("torchrun --nproc_per_node=8 --nnodes=2 t.py\n")
    assert out.startswith(f"msrun --local_worker_num=8 --worker_num=16 {DEFAULTS} t.py")


def test_world_size_variable_is_used_when_it_is_the_product_and_defined_before() -> None:
    script = "N=8\nM=2\nGPUS=$(( M * N ))\ntorchrun --nproc_per_node $N --nnodes $M t.py\n"
    assert "--worker_num $GPUS" in convert(script)
    later = "N=8\nM=2\ntorchrun --nproc_per_node $N --nnodes $M t.py\nWORLD_SIZE=$(($N*$M))\n"
    assert "--worker_num $((N*M))" in convert(later)


def test_world_size_is_preferred_over_other_product_variables() -> None:
    script = "N=8\nM=2\nGPUS=$((N*M))\nWORLD_SIZE=$(($N*$M))\ntorchrun --nproc_per_node $N --nnodes $M t.py\n"
    assert "--worker_num $WORLD_SIZE" in convert(script)


def test_a_factor_of_one_gives_the_other_factor_as_written() -> None:
    assert "--worker_num=$NODES" in convert("torchrun --nproc_per_node=1 --nnodes=$NODES t.py\n")
    assert "--worker_num=$N" in convert("torchrun --nproc_per_node=$N --nnodes=1 t.py\n")


def test_without_a_product_variable_the_product_is_written_out() -> None:
    assert "--worker_num $((N*M))" in convert("torchrun --nproc_per_node $N --nnodes $M t.py\n")
