"""``torch._dynamo.eval_frame`` reachable as an attribute on MSAdapter, as PyTorch's ``torch._dynamo`` has it.

PyTorch's ``torch/_dynamo/__init__.py`` imports its ``eval_frame`` submodule, so ``torch._dynamo.eval_frame`` is an
attribute once ``torch`` is imported. MSAdapter ships ``msadapter/_dynamo/eval_frame.py`` (its ``OptimizedModule``)
but its ``__init__`` does not import it: ``torch._dynamo.eval_frame`` raised ``AttributeError``. accelerate's
``is_compiled_module`` and ``has_compiled_regions`` read ``torch._dynamo.eval_frame.OptimizedModule``, and
transformers' ``save_pretrained`` calls the first (through ``unwrap_model``): every HF model save on MindSpore
stopped, MindSpeed-LLM's ``convert_ckpt.py --save-model-type hf`` (Megatron -> HF) with it.

The registry patches attributes, and a target named ``msadapter._dynamo.eval_frame`` is the submodule itself
(it waits for its own import): so the reader is wrapped, and wrapping it imports the submodule, which makes it the
package's attribute for every later reader, as on PyTorch. Nothing is compiled on MindSpore: ``isinstance(module,
OptimizedModule)`` answers ``False``, as PyTorch's does for a module ``torch.compile`` did not wrap.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["PURPOSE", "eval_frame_reader_wrapper"]

PURPOSE = ("torch._dynamo.eval_frame was not an attribute under MSAdapter (its __init__ does not import the "
           "submodule; PyTorch's does): accelerate's is_compiled_module, so transformers' save_pretrained, raised "
           "AttributeError (MindSpeed-LLM's convert_ckpt.py --save-model-type hf)")


def eval_frame_reader_wrapper(reader: Callable[..., Any]) -> Callable[..., Any]:
    """Import ``torch._dynamo.eval_frame`` (MSAdapter's submodule) and return ``reader`` unchanged.

    Args:
        reader: a function reading ``torch._dynamo.eval_frame`` (accelerate's ``is_compiled_module``).

    Returns:
        ``reader`` itself: once the submodule is imported it is ``torch._dynamo``'s attribute, as on PyTorch.
    """
    importlib.import_module("msadapter._dynamo.eval_frame")
    return reader
