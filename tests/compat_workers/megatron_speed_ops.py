"""Run mindspeed_ms.compat.megatron_speed under MSAdapter with megatron-core; print JSON lines.

Each case reports what the replacement computed and what PyTorch's semantics (written in NumPy) give.
Run in a subprocess with MINDSPEED_AI_FRAMEWORK=mindspore: the adaptor applies the built-in providers.
"""

from __future__ import annotations

import json
import types

import mindspeed_ms.adaptor  # noqa: F401  (first: MindSpore mode, MSAdapter's torch, the providers applied)

# isort: split
import numpy as np
import torch

from mindspeed_ms.compat import megatron_speed as speed

VALUES = (np.arange(1, 11, dtype=np.float32) * np.float32(0.37)).astype(np.float32)


def emit(case: str, **values: object) -> None:
    print(json.dumps({"case": case, **values}), flush=True)


def bucketed() -> tuple[object, list[torch.nn.Parameter], object]:
    """Two parameters whose main_grad views tile a 10-element buffer: one DDP bucket, gradients set."""
    buffer = torch.zeros(10)
    buffer.copy_(torch.tensor(VALUES))
    params = [torch.nn.Parameter(torch.ones(2, 3)), torch.nn.Parameter(torch.ones(4))]
    params[0].main_grad = buffer[0:6].view(2, 3)
    params[1].main_grad = buffer[6:10].view(4)
    for param in params:
        param.tensor_model_parallel = True  # not a tensor-parallel duplicate, without a process group
        param.grad = param.main_grad
    bucket = types.SimpleNamespace(params_list=list(params), grad_data=buffer[0:10].view(10))
    speed.remember_buckets(types.SimpleNamespace(buckets=[bucket]))
    return buffer, params, bucket


def optimizer(params: list, **config: object) -> object:
    settings = dict(use_precision_aware_optimizer=False, clip_grad=0.0, log_num_zeros_in_grad=False)
    settings.update(config)
    return types.SimpleNamespace(config=types.SimpleNamespace(**settings), get_parameters=lambda: list(params))


def scale_cases() -> None:
    buffer = torch.tensor(VALUES)
    view = buffer[2:8]
    mindspore_product = (torch.tensor(VALUES[2:8]) * 0.3).numpy()
    speed.scale_in_place(view, 0.3)
    expected = VALUES.copy()
    expected[2:8] = VALUES[2:8] * np.float32(0.3)
    emit("scale_view", base=buffer.numpy().tolist(), expected=expected.tolist(),
         same_as_mindspore_mul=bool((buffer.numpy()[2:8] == mindspore_product).all()))


def grad_norm_cases() -> None:
    buffer, params, _ = bucketed()
    whole = speed.get_main_grads_for_grad_norm(optimizer(params))
    params[1].shared = True  # megatron leaves shared parameters out of the norm: the bucket is no longer whole
    partial = speed.get_main_grads_for_grad_norm(optimizer(params))
    _, others, _ = bucketed()
    others[1].grad = torch.tensor(VALUES[6:10])  # a gradient that is not the buffer's view
    loose = speed.get_main_grads_for_grad_norm(optimizer(others))
    _, missing, _ = bucketed()
    missing[1].main_grad = None  # no main_grad to lie in: the bucket is not whole
    without = speed.get_main_grads_for_grad_norm(optimizer(missing))
    _, gradless, _ = bucketed()
    extra = torch.nn.Parameter(torch.ones(5))  # no gradient: left out of the norm (the loop's path)
    extra.tensor_model_parallel = True
    without_grad = speed.get_main_grads_for_grad_norm(optimizer([*gradless, extra]))
    emit("grad_norm_without_a_grad", sizes=[int(t.numel()) for t in without_grad])
    emit("grad_norm", whole=[int(t.numel()) for t in whole], whole_is_buffer=whole[0].data_ptr() == buffer.data_ptr(),
         without_main_grad=[int(t.numel()) for t in without],
         partial=[int(t.numel()) for t in partial], loose=[int(t.numel()) for t in loose],
         norm=float(np.sqrt(sum(float((t.numpy().astype(np.float64) ** 2).sum()) for t in whole))),
         expected_norm=float(np.sqrt((VALUES.astype(np.float64) ** 2).sum())))


def clip_cases() -> None:
    buffer, params, _ = bucketed()
    own = torch.nn.Parameter(torch.ones(3))
    own.grad = torch.tensor([3.0, -4.0, 0.5])
    speed.clip_grad_by_total_norm_fp32([*params, own], max_norm=1.0, total_norm=4.0)
    coeff = 1.0 / (4.0 + 1.0e-6)
    gradless_buffer, gradless, _ = bucketed()
    extra = torch.nn.Parameter(torch.ones(5))  # no gradient: skipped (the loop's path), the bucket still scaled
    speed.clip_grad_by_total_norm_fp32([*gradless, extra], max_norm=1.0, total_norm=4.0)
    emit("clip_without_a_grad", bucket=gradless_buffer.numpy().tolist(), extra_grad=extra.grad is None)
    untouched, untouched_params, _ = bucketed()
    speed.clip_grad_by_total_norm_fp32(untouched_params, max_norm=1.0, total_norm=0.5)
    emit("clip", bucket=buffer.numpy().tolist(), expected=(VALUES * np.float32(coeff)).tolist(),
         own=own.grad.numpy().tolist(), own_expected=(np.array([3.0, -4.0, 0.5], np.float32)
                                                       * np.float32(coeff)).tolist(),
         below_max=untouched.numpy().tolist(), values=VALUES.tolist())
    wrong = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))
    wrong.grad = torch.ones(2, dtype=torch.float16)
    try:
        speed.clip_grad_by_total_norm_fp32([wrong], max_norm=1.0, total_norm=4.0)
        emit("clip_dtype", raised=None)
    except TypeError as error:
        emit("clip_dtype", raised=type(error).__name__, message=str(error))


class Chained:
    """Shaped like megatron's ChainedOptimizer as chained_optimizer_step uses it; records the calls."""

    def __init__(self, inner: list, inf: bool = False) -> None:
        self.chained_optimizers = inner
        self.inf = inf
        self.calls: list[str] = []

    def prepare_grads(self) -> bool:
        self.calls.append("prepare_grads")
        return self.inf

    def get_grad_norm(self) -> float:
        self.calls.append("get_grad_norm")
        return 4.0

    def count_zeros(self) -> int:
        self.calls.append("count_zeros")
        return 7

    def step_with_ready_grads(self) -> bool:
        self.calls.append("step_with_ready_grads")
        return True


def chained_step_cases() -> None:
    for name, flag in (("off", False), ("on", True)):
        chained = Chained([optimizer([], log_num_zeros_in_grad=flag)])
        emit(f"chained_{name}", result=list(speed.chained_optimizer_step(chained)), calls=chained.calls)
    chained = Chained([optimizer([])], inf=True)
    emit("chained_inf", result=list(speed.chained_optimizer_step(chained)), calls=chained.calls)
    buffer, params, _ = bucketed()
    stub = optimizer(params, clip_grad=1.0)
    stub.is_stub_optimizer = True
    _, clipped_params, _ = bucketed()
    clipped = bucketed_buffer = clipped_params[0].main_grad  # noqa: F841  (kept alive with its buffer)
    chained = Chained([stub, optimizer(clipped_params, clip_grad=1.0)])
    speed.chained_optimizer_step(chained)
    emit("chained_clip", stub=buffer.numpy().tolist(), clipped=clipped_params[1].grad.numpy().tolist(),
         expected=(VALUES[6:10] * np.float32(1.0 / (4.0 + 1.0e-6))).tolist(), values=VALUES.tolist())


if __name__ == "__main__":
    for run in (scale_cases, grad_norm_cases, clip_cases, chained_step_cases):
        run()
