"""Checkpoints of examples/pretrain_gpt.py in Megatron's own formats, written and read by megatron-core.

``--ckpt-format torch_dist`` (the default, as in Megatron-LM): one distributed checkpoint per saved
iteration, ``DIR/iter_NNNNNNN/``, written by ``megatron.core.dist_checkpointing.save`` from the model's
and the optimizer's sharded state dicts (the distributed optimizer's state sharded in the model's
space), read back by ``dist_checkpointing.load``; the random generators' states are a ShardedObject
per tensor x pipeline rank.

``--ckpt-format torch`` (Megatron-LM's legacy format): ``DIR/iter_NNNNNNN/mp_rank_TT[_PPP][_EEE]/
model_optim_rng.pt``, one ``torch.save`` of the state dict (``model``, ``optimizer``, ``rng_state``,
``iteration``, ``checkpoint_version``) per model-parallel rank, written by its first data-parallel
rank; with the distributed optimizer its parameter state goes to ``distrib_optim.pt`` beside it
(megatron-core's ``save_parameter_state``).

Both write ``DIR/latest_checkpointed_iteration.txt``, the last iteration saved. These are the layouts
Megatron-LM's ``checkpointing.py`` writes, so its tools (and either backend) read them.
"""

import os
import random

import numpy as np
import torch
from megatron.core import dist_checkpointing, parallel_state
from megatron.core.dist_checkpointing.mapping import ShardedObject
from megatron.core.tensor_parallel.random import get_cuda_rng_tracker

TRACKER_FILE = "latest_checkpointed_iteration.txt"
CHECKPOINT_VERSION = 3.0
FORMATS = ("torch_dist", "torch")


class CheckpointError(SystemExit):
    """A checkpoint that this run cannot resume from (the message says why and what to do)."""


def iteration_dir(root, iteration):
    return os.path.join(root, f"iter_{iteration:07d}")


def legacy_rank_dir(root, iteration):
    """Megatron-LM's ``mp_rank_TT[_PPP][_EEE]`` folder of this rank in the legacy format."""
    name = f"mp_rank_{parallel_state.get_tensor_model_parallel_rank():02d}"
    if parallel_state.get_pipeline_model_parallel_world_size() > 1:
        name += f"_{parallel_state.get_pipeline_model_parallel_rank():03d}"
    if parallel_state.get_expert_model_parallel_world_size() > 1:
        name += f"_{parallel_state.get_expert_model_parallel_rank():03d}"
    return os.path.join(iteration_dir(root, iteration), name)


def rng_state():
    """This rank's generators, under Megatron-LM's keys."""
    return {"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
            "torch_rng_state": torch.get_rng_state(), "rng_tracker_states": get_cuda_rng_tracker().get_states()}


def restore_rng_state(state):
    """Put the generators back; the torch generator's state must come from this backend."""
    own = torch.get_rng_state()
    stored = state["torch_rng_state"]
    if tuple(stored.shape) != tuple(own.shape):
        raise CheckpointError(
            f"the checkpoint's torch generator state has {tuple(stored.shape)} bytes, this backend's has "
            f"{tuple(own.shape)}: it was written by the other backend (PyTorch's CPU generator is a Mersenne "
            f"twister, MindSpore's a Philox seed and offset) and cannot be restored here; resume with "
            f"--no-load-rng (as Megatron-LM does) to keep the current generators")
    random.setstate(state["random_rng_state"])
    np.random.set_state(state["np_rng_state"])
    torch.set_rng_state(stored)
    get_cuda_rng_tracker().set_states(state["rng_tracker_states"])


def _sharded_rng_state():
    tp, pp = parallel_state.get_tensor_model_parallel_rank(), parallel_state.get_pipeline_model_parallel_rank()
    shape = (parallel_state.get_pipeline_model_parallel_world_size(),
             parallel_state.get_tensor_model_parallel_world_size())
    return ShardedObject("rng_state", [rng_state()], shape, (pp, tp),
                         replica_id=parallel_state.get_data_parallel_rank(with_context_parallel=True))


def _sharded_state_dict(model, optimizer, iteration, is_loading):
    model_state = model.module.sharded_state_dict()
    return {"model": model_state, "optimizer": optimizer.sharded_state_dict(model_state, is_loading=is_loading),
            "rng_state": _sharded_rng_state(), "iteration": iteration, "checkpoint_version": CHECKPOINT_VERSION}


def save_checkpoint(args, iteration, model, optimizer):
    """Save iteration ``iteration`` in ``args.ckpt_format`` under ``args.save`` (see the module docstring)."""
    rank = torch.distributed.get_rank()
    directory = iteration_dir(args.save, iteration)
    if args.ckpt_format == "torch_dist":
        if rank == 0:
            os.makedirs(directory, exist_ok=True)
        torch.distributed.barrier()
        dist_checkpointing.save(_sharded_state_dict(model, optimizer, iteration, is_loading=False), directory)
    else:
        folder = legacy_rank_dir(args.save, iteration)
        state = {"args": None, "checkpoint_version": CHECKPOINT_VERSION, "iteration": iteration,
                 "model": model.state_dict_for_save_checkpoint(), "optimizer": optimizer.state_dict(),
                 "rng_state": [rng_state()]}
        if parallel_state.get_expert_data_parallel_rank() == 0:
            os.makedirs(folder, exist_ok=True)
            torch.save(state, os.path.join(folder, "model_optim_rng.pt"))
        if args.use_distributed_optimizer:
            # every data-parallel rank takes part (the state is gathered to the first one, which writes it)
            if parallel_state.get_data_parallel_rank(with_context_parallel=True) == 0:
                os.makedirs(folder, exist_ok=True)
            optimizer.save_parameter_state(os.path.join(folder, "distrib_optim.pt"))
    torch.distributed.barrier()
    if rank == 0:
        with open(os.path.join(args.save, TRACKER_FILE), "w") as stream:
            stream.write(str(iteration))
    torch.distributed.barrier()


def load_checkpoint(args, model, optimizer):
    """Restore the last iteration saved under ``args.load`` (or ``args.ckpt_step``); return that iteration."""
    if args.ckpt_step:
        iteration = args.ckpt_step
    else:
        with open(os.path.join(args.load, TRACKER_FILE)) as stream:
            iteration = int(stream.read().strip())
    if args.ckpt_format == "torch_dist":
        template = _sharded_state_dict(model, optimizer, iteration, is_loading=True)
        state = dist_checkpointing.load(template, iteration_dir(args.load, iteration))
        rng = state["rng_state"][0]
    else:
        folder = legacy_rank_dir(args.load, iteration)
        state = torch.load(os.path.join(folder, "model_optim_rng.pt"), map_location="cpu", weights_only=False)
        rng = state["rng_state"][0]
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if args.ckpt_format == "torch" and args.use_distributed_optimizer:
        optimizer.load_parameter_state(os.path.join(folder, "distrib_optim.pt"))
    if not args.no_load_rng:
        restore_rng_state(rng)
    if state["iteration"] != iteration:
        raise CheckpointError(f"{args.load}: the checkpoint of iteration {iteration} holds iteration "
                              f"{state['iteration']}")
    torch.distributed.barrier()
    return iteration
