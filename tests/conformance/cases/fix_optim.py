"""Optimizers and gradient resets fixed by the built-in providers: zero_grad both ways, Adam's step state."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _model(torch: Any) -> Any:
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(data((2, 3), seed=11)))
        model.bias.copy_(torch.tensor(data((2,), seed=12)))
    return model


def _loss(torch: Any, model: Any, seed: int) -> Any:
    return (model(torch.tensor(data((4, 3), seed=seed))) ** 2).sum()


@case("torch.optim.Optimizer.zero_grad", "torch.optim.Adam.step")
def optimizer_zero_grad_keeping_tensors_zeroes_them(torch: Any) -> Any:
    model = _model(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    _loss(torch, model, 13).backward()
    optimizer.zero_grad(set_to_none=False)
    zeroed = {"weight": model.weight.grad.clone(), "bias": model.bias.grad.clone()}
    _loss(torch, model, 14).backward()
    optimizer.step()
    optimizer.zero_grad()
    return {"zeroed": zeroed, "weight": model.weight, "bias": model.bias, "none_after": model.weight.grad is None}


@case("torch.nn.Module.zero_grad")
def module_zero_grad_both_ways(torch: Any) -> Any:
    model = _model(torch)
    _loss(torch, model, 15).backward()
    model.zero_grad(set_to_none=False)
    kept = {"weight": model.weight.grad.clone(), "bias": model.bias.grad.clone()}
    _loss(torch, model, 16).backward()
    accumulated = model.weight.grad.clone()
    model.zero_grad()
    return {"kept": kept, "accumulated": accumulated, "none_after": model.weight.grad is None}


@case("torch.optim.Adam.step", "torch.optim.AdamW.step")
def adam_step_state_is_per_parameter_and_updated_in_place(torch: Any) -> Any:
    out = {}
    for name in ("Adam", "AdamW"):
        model = _model(torch)
        optimizer = getattr(torch.optim, name)(model.parameters(), lr=0.05)
        _loss(torch, model, 17).backward()
        optimizer.step()
        weight_step = optimizer.state[model.weight]["step"]
        bias_step = optimizer.state[model.bias]["step"]
        optimizer.step()
        out[name] = {"shared": weight_step is bias_step, "weight_step_alias": weight_step,
                     "bias_step": optimizer.state[model.bias]["step"], "weight": model.weight}
    return out


@case("torch.optim.Adam.step")
def adam_step_reads_a_step_edited_in_place(torch: Any) -> Any:
    model = _model(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    _loss(torch, model, 18).backward()
    optimizer.step()
    optimizer.state[model.weight]["step"].fill_(10.0)
    optimizer.step()
    return {"weight": model.weight, "bias": model.bias, "weight_step": optimizer.state[model.weight]["step"],
            "bias_step": optimizer.state[model.bias]["step"]}


@case("torch.optim.SGD.step")
def sgd_momentum_survives_the_gradient_being_zeroed_in_place(torch: Any) -> Any:
    # megatron's DDP hands the optimizer views of its gradient buffer (param.grad = param.main_grad) and zeroes that
    # buffer in place before the next iteration's backward: the momentum buffer must be a copy of the first gradient
    model = _model(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    momenta = []
    for seed in (19, 20, 21):
        _loss(torch, model, seed).backward()
        optimizer.step()
        momenta.append(optimizer.state[model.weight]["momentum_buffer"].clone())
        for param in model.parameters():
            param.grad.zero_()
    return {"weight": model.weight, "bias": model.bias, "momenta": momenta}
