"""mindspeed_ms.compat.slice_copies: the marks on pieces that are copies where PyTorch's are views, and the refusal of
in-place writes into them or into their input while one is alive (plain objects here; the conformance family
fix_slice_copies drives the real ops against PyTorch)."""

from __future__ import annotations

import gc
import re

import pytest

from mindspeed_ms.compat.errors import InPlaceOnViewError
from mindspeed_ms.compat.slice_copies import basic_index, mark, refuse_write


class _Tensor:
    _shape = (2,)


def _site() -> str:
    return "caller.py:1 in f"


@pytest.mark.parametrize("index", [1, slice(0, 2), None, Ellipsis, (Ellipsis, slice(None, 2)), (0, None, slice(1))])
def test_ints_slices_none_and_ellipsis_are_view_indices(index: object) -> None:
    assert basic_index(index)


@pytest.mark.parametrize("index", [True, [0, 1], (0, [1]), (slice(None), False), object()])
def test_lists_bools_and_other_indices_copy_in_pytorch(index: object) -> None:
    assert not basic_index(index)


def test_a_write_into_a_marked_piece_raises_naming_the_op_and_the_caller() -> None:
    base, piece = _Tensor(), _Tensor()
    mark("narrow()", base, (piece,))
    with pytest.raises(InPlaceOnViewError, match=r"Tensor\.add_ on a view at caller\.py:1 in f: this tensor came "
                                                 r"from narrow\(\)"):
        refuse_write("add_", piece, _site)


def test_a_write_into_a_piece_of_a_multiple_view_op_says_what_pytorch_says() -> None:
    """PyTorch refuses writes into split/chunk/unbind pieces ("returns multiple views"): same words, so code that
    matches PyTorch's message (megatron's tests, ours in test_compat_host_attention) sees them"""
    for op in ("split()", "chunk()", "unbind()", "torch.split()"):
        base, piece = _Tensor(), _Tensor()
        mark(op, base, (piece,))
        with pytest.raises(InPlaceOnViewError, match=rf"piece of {re.escape(op)} .*returns multiple views"):
            refuse_write("add_", piece, _site)


def test_a_write_into_the_input_raises_while_a_piece_is_alive_and_not_after() -> None:
    base, first, second = _Tensor(), _Tensor(), _Tensor()
    mark("Tensor.__getitem__", base, first)
    mark("narrow()", base, [second])
    with pytest.raises(InPlaceOnViewError, match=r"2 piece\(s\) taken from this tensor by Tensor.__getitem__, "
                                                 r"narrow\(\) are alive"):
        refuse_write("mul_", base, _site)
    del first
    gc.collect()
    with pytest.raises(InPlaceOnViewError, match=r"1 piece\(s\) taken from this tensor by narrow\(\)"):
        refuse_write("mul_", base, _site)
    del second
    gc.collect()
    refuse_write("mul_", base, _site)  # no piece alive: the write goes ahead


def test_unmarked_tensors_and_non_tensors_pass() -> None:
    base = _Tensor()
    mark("unbind()", base, (_Tensor(), 3, None))  # only tensors are marked; the temporary piece is gone at once
    refuse_write("copy_", base, _site)
    refuse_write("copy_", _Tensor(), _site)
