"""Import this first in a training entrypoint to run it on MindSpore: ``import mindspeed_ms.adaptor``.

This is the one module of mindspeed_ms with an import side effect: it calls
:meth:`MindSporeAdaptation.execute`, which does nothing (and imports nothing) unless the framework
is MindSpore (``--ai-framework mindspore`` on the command line, or ``MINDSPEED_AI_FRAMEWORK=mindspore``).
Importing it again, or calling ``execute()`` again, changes nothing.
"""

from __future__ import annotations

from mindspeed_ms.adaptation import MindSporeAdaptation

__all__ = ["MindSporeAdaptation"]

MindSporeAdaptation.execute()
