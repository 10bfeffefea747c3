"""Run Adam/AdamW over a DDP-style bucket (flat path) and over the same parameters one by one; print JSON lines.

Run in a subprocess with MINDSPEED_AI_FRAMEWORK=mindspore: the adaptor applies the built-in providers
(``torch.optim.AdamW`` follows PyTorch's rule, ``copy_`` writes through views).
"""

from __future__ import annotations

import json
import types

import mindspeed_ms.adaptor  # noqa: F401  (first: MindSpore mode, MSAdapter's torch, the providers applied)

# isort: split
import numpy as np
import torch

from mindspeed_ms.compat import megatron_speed as speed

SHAPES = [(2, 3), (4,), (3, 2), (190, 180)]  # the last one spans two of the host update's chunks


def emit(case: str, **values: object) -> None:
    print(json.dumps({"case": case, **values}), flush=True)


def build(bucketed: bool, kind: str, seed: int = 0, **options: object) -> tuple:
    rng = np.random.RandomState(seed)
    params = [torch.nn.Parameter(torch.tensor(rng.normal(size=shape).astype(np.float32))) for shape in SHAPES]
    buffer = torch.zeros(sum(int(np.prod(shape)) for shape in SHAPES))
    if bucketed:
        offset = 0
        for param in params:
            size = int(param.numel())
            param.main_grad = buffer[offset:offset + size].view(tuple(param.shape))
            offset += size
        bucket = types.SimpleNamespace(params_list=list(params), grad_data=buffer[0:offset].view(offset))
        speed.remember_buckets(types.SimpleNamespace(buckets=[bucket]))
    groups = [{"params": [params[0], params[2], params[3]], "weight_decay": 0.1},
              {"params": [params[1]], "weight_decay": 0.0}]
    cls = torch.optim.AdamW if kind == "AdamW" else torch.optim.Adam
    return params, buffer, cls(groups, lr=0.01, **options)


def set_grads(params: list, buffer: object, bucketed: bool, step: int) -> None:
    values = np.random.RandomState(100 + step).normal(size=int(buffer.numel())).astype(np.float32)
    if bucketed:
        buffer.copy_(torch.tensor(values))
        for param in params:
            param.grad = param.main_grad
        return
    offset = 0
    for param in params:
        size = int(param.numel())
        param.grad = torch.tensor(values[offset:offset + size].reshape(tuple(param.shape)))
        offset += size


def snapshot(params: list, optimizer: object) -> dict:
    state = [{key: (value.numpy().tolist() if hasattr(value, "numpy") else value)
              for key, value in optimizer.state[param].items()} for param in params]
    return {"params": [param.detach().numpy().tolist() for param in params], "state": state}


def fresh_copy(state_dict: dict) -> dict:
    """The state dict with fresh tensors (loading shares the tensors it is given, in PyTorch too)."""
    state = {key: {name: torch.tensor(value.numpy()) if hasattr(value, "numpy") else value
                   for name, value in entry.items()} for key, entry in state_dict["state"].items()}
    groups = [dict(group, params=list(group["params"])) for group in state_dict["param_groups"]]
    return {"state": state, "param_groups": groups}


def run_case(name: str, kind: str, steps: int = 4, **options: object) -> None:
    flat_params, buffer, flat_opt = build(True, kind, **options)
    ref_params, ref_buffer, ref_opt = build(False, kind, **options)
    for step in range(steps):
        set_grads(flat_params, buffer, True, step)
        set_grads(ref_params, ref_buffer, False, step)
        flat_opt.step()
        ref_opt.step()
    used_flat = bool(getattr(flat_opt, "_mindspeed_ms_flat_adam", None))
    flat, ref = snapshot(flat_params, flat_opt), snapshot(ref_params, ref_opt)
    # a state dict saved by the per-parameter run, loaded into the flat one: both continue identically
    flat_opt.load_state_dict(fresh_copy(ref_opt.state_dict()))
    for step in range(steps, steps + 2):
        set_grads(flat_params, buffer, True, step)
        set_grads(ref_params, ref_buffer, False, step)
        flat_opt.step()
        ref_opt.step()
    emit(name, used_flat=used_flat, flat=flat, ref=ref, resumed=snapshot(flat_params, flat_opt),
         resumed_ref=snapshot(ref_params, ref_opt),
         state_dict_steps=[float(s["step"]) for s in flat_opt.state_dict()["state"].values()])


def moved_case() -> None:
    """What the flat path keeps between steps moves: a parameter's memory (``param.data = ...``), the step
    counters (new tensors), a gradient that is no longer the bucket's view; both runs do the same."""
    flat_params, buffer, flat_opt = build(True, "AdamW")
    ref_params, ref_buffer, ref_opt = build(False, "AdamW")
    used = []
    for step in range(6):
        if step == 2:  # new memory for one parameter (and new values), in both runs
            values = np.linspace(-1, 1, int(np.prod(SHAPES[3]))).astype(np.float32).reshape(SHAPES[3])
            flat_params[3].data = torch.tensor(values)
            ref_params[3].data = torch.tensor(values)
        if step == 3:  # new step counters, one step ahead
            for optimizer in (flat_opt, ref_opt):
                for state in optimizer.state.values():
                    state["step"] = torch.tensor(float(state["step"]) + 1.0)
        set_grads(flat_params, buffer, True, step)
        set_grads(ref_params, ref_buffer, False, step)
        if step == 4:  # one gradient elsewhere: this step takes the per-parameter path
            flat_params[1].grad = torch.tensor(flat_params[1].main_grad.numpy().copy())
        layouts = getattr(flat_opt, "_mindspeed_ms_flat_adam_layouts", {})
        before = [layout.addresses for layout in layouts.values()]
        flat_opt.step()
        ref_opt.step()
        after = [layout.addresses for layout in getattr(flat_opt, "_mindspeed_ms_flat_adam_layouts", {}).values()]
        used.append(bool(after) and after != before if step == 2 else bool(after))
    emit("moved", used=used, flat=snapshot(flat_params, flat_opt), ref=snapshot(ref_params, ref_opt),
         moved_address=int(flat_params[3].data_ptr()))


if __name__ == "__main__":
    moved_case()
    run_case("adamw", "AdamW")
    run_case("adamw_amsgrad_maximize", "AdamW", amsgrad=True, maximize=True)
    run_case("adam_l2", "Adam")  # L2 decay: the per-parameter path
    run_case("adam_decoupled", "Adam", decoupled_weight_decay=True)
    # flat_adam's own chunk loop, as where the C loops are not built (host_kernels.adam_bucket then says False)
    from mindspeed_ms.compat import host_kernels

    host_kernels.adam_bucket = lambda *args: False  # type: ignore[assignment]
    run_case("adamw_chunk_loop", "AdamW")
    run_case("adamw_amsgrad_maximize_chunk_loop", "AdamW", amsgrad=True, maximize=True)
