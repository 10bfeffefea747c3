"""Stand-in for Megatron-LM's megatron.training (see tests/fakes/megatron_lm/README.md)."""

from megatron.training.global_vars import get_args  # noqa: F401
