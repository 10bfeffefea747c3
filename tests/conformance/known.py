"""Cases known to diverge today, with why. The test of each is a strict xfail: it fails as soon as the case
conforms (then delete the entry). The report lists them as divergent. Fixing one = conform it, or make it a loud
typed error of ours, and remove it from here."""

from __future__ import annotations

KNOWN_DIVERGENT: dict[str, str] = {
    # found by the OpInfo-style cases (conformance/cases/ops_*.py); one line each in /work/notes/conformance_findings.md
    'ops_autograd.requires_grad_on_int_raises': 'PyTorch raises RuntimeError: only Tensors of floating point dtype can',
    'ops_autograd.retain_grad': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_binary.__add____grad': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___narrow': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___owner': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___select': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___slice': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___transpose': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___view': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_inplace.clamp___view_of_view': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_misc.rng_state_round_trip': "result['replays']: ours False, PyTorch True",
    'ops_nn.add_fn_alpha__grad': 'ours raises RuntimeError: The kernel Clone unregistered.',
    'ops_nn.concatenate__float16': "ours raises TypeError: concatenate() got an unexpected keyword argument 'axis'",
    'ops_nn.concatenate__float32': "ours raises TypeError: concatenate() got an unexpected keyword argument 'axis'",
    'ops_nn.concatenate__grad': "ours raises TypeError: concatenate() got an unexpected keyword argument 'axis'",
    'ops_nn.interpolate__float32': "ours raises TypeError: For 'interpolate', the 'scale_factor' must be float, but go",
    'ops_nn.interpolate__grad': "ours raises TypeError: For 'interpolate', the 'scale_factor' must be float, but got '",
    'ops_shape.as_strided': "result['contiguous'][0]: ours True, PyTorch False",
    'ops_shape.as_strided_method': "result['contiguous'][0]: ours True, PyTorch False",
    'ops_shape.type_strings': "x.type() is 'torch.cuda.FloatTensor' (MSAdapter's tensors report the accelerator)",
    # refusals (conformance/cases/ops_errors.py)
}

#: divergent cases whose outcome depends on uninitialised memory (a reduction over an empty tensor returns whatever
#: the output buffer held, sometimes the right 0): a non-strict xfail, since a run can pass by chance. Same rule:
#: delete the entry when the op is fixed.
KNOWN_UNSTABLE: dict[str, str] = {
}
