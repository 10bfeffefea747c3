"""torch calls of the field's sources that raised on our side or that no case exercised: einsum in the forms
MindSpeed's MoE and megatron's Mamba use, F.conv1d with groups (Mamba's depthwise convolution), torch.less,
pad_sequence, grid_sample; and nn.MultiheadAttention (not the field's; it raised for the same reason as einsum)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("torch.einsum")
def einsum_forms_of_the_field(torch: Any) -> Any:
    def t(shape: tuple[int, ...], seed: int) -> Any:
        return torch.tensor(data(shape, seed=seed))

    forms = {"sec,sm->ecm": ((4, 2, 3), (4, 5)), "sec,ecm->sm": ((4, 2, 3), (2, 3, 5)),
             "se,sc->sec": ((4, 2), (4, 3)), "s,se->se": ((4,), (4, 2)), "bd,dn->bdn": ((2, 3), (3, 4)),
             "bd,bdn,bd->bdn": ((2, 3), (2, 3, 4), (2, 3)), "bh,bn,bhp->bhpn": ((2, 3), (2, 4), (2, 3, 5)),
             "bhpn,bn->bhp": ((2, 3, 5, 4), (2, 4)), "bgot,bgit->goi": ((2, 1, 3, 5), (2, 1, 2, 5))}
    return {form: torch.einsum(form, *(t(shape, 100 + i) for i, shape in enumerate(shapes)))
            for form, shapes in forms.items()}


@case("torch.einsum")
def einsum_combine_gradient(torch: Any) -> Any:
    weights = torch.tensor(data((4, 2, 3), seed=110)).requires_grad_(True)
    experts = torch.tensor(data((2, 3, 5), seed=111)).requires_grad_(True)
    (torch.einsum("sec,ecm->sm", weights, experts) * torch.tensor(data((4, 5), seed=112))).sum().backward()
    return [weights.grad, experts.grad]


@case("torch.nn.functional.conv1d", "torch.nn.Conv1d")
def conv1d_depthwise_and_grouped(torch: Any) -> Any:
    F = torch.nn.functional
    x = torch.tensor(data((2, 4, 7), seed=113))
    depthwise, grouped = torch.tensor(data((4, 1, 3), seed=114)), torch.tensor(data((6, 2, 2), seed=115))
    bias = torch.tensor(data((4,), seed=116))
    module = torch.nn.Conv1d(4, 4, 3, groups=4, padding=2)
    with torch.no_grad():
        module.weight.copy_(depthwise)
        module.bias.copy_(bias)
    return {"mamba": F.conv1d(x, depthwise, bias, padding=2, groups=4),
            "plain_groups": F.conv1d(x, depthwise, groups=4), "grouped": F.conv1d(x, grouped, None, 2, 1, 2, 2),
            "same": F.conv1d(x, depthwise, bias, padding="same", groups=4),
            "valid": F.conv1d(x, depthwise, padding="valid", groups=4),
            "unbatched": F.conv1d(x[0], depthwise, groups=4),
            "tuples": F.conv1d(x, grouped, None, (1,), (2,), (1,), 2), "module": module(x).detach()}


@case("torch.nn.functional.conv1d")
def conv1d_depthwise_gradient(torch: Any) -> Any:
    x = torch.tensor(data((2, 4, 7), seed=117)).requires_grad_(True)
    weight = torch.tensor(data((4, 1, 3), seed=118)).requires_grad_(True)
    bias = torch.tensor(data((4,), seed=119)).requires_grad_(True)
    out = torch.nn.functional.conv1d(x, weight, bias, padding=2, groups=4)
    (out * torch.tensor(data((2, 4, 9), seed=120))).sum().backward()
    return [x.grad, weight.grad, bias.grad]


@case("torch.less", "torch.nn.utils.rnn.pad_sequence", "torch.nn.functional.grid_sample")
def less_pad_sequence_grid_sample(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=121))
    sequences = [torch.tensor(data((n, 2), seed=122 + n)) for n in (2, 4, 1)]
    image = torch.tensor(data((1, 2, 4, 5), seed=126))
    grid = torch.tensor(data((1, 3, 2, 2), seed=127, low=-1.0, high=1.0))
    return {"less": torch.less(x, 0.5), "less_tensor": torch.less(x, x.t()[:1].t()),
            "pad_first": torch.nn.utils.rnn.pad_sequence(sequences, batch_first=True),
            "pad_time": torch.nn.utils.rnn.pad_sequence(sequences, padding_value=-1.0),
            "grid": torch.nn.functional.grid_sample(image, grid, mode="bilinear", align_corners=False),
            "grid_aligned": torch.nn.functional.grid_sample(image, grid, align_corners=True)}


@case("torch.nn.MultiheadAttention", "torch.nn.functional.multi_head_attention_forward")
def multihead_attention_module(torch: Any) -> Any:
    # MSAdapter's multi_head_attention_forward views its own transposes: it raised the view refusal
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(8, 2)
    with torch.no_grad():
        for seed, parameter in enumerate(module.parameters()):
            parameter.copy_(torch.tensor(data(tuple(parameter.shape), seed=140 + seed, low=-0.5, high=0.5)))
    x = torch.tensor(data((3, 2, 8), seed=145)).requires_grad_(True)
    out, weights = module(x, x, x)
    unweighted, none = module(x, x, x, need_weights=False)
    out.sum().backward()
    return {"out": out.detach(), "weights": weights.detach(), "unweighted": unweighted.detach(), "none": none,
            "grad": x.grad}
