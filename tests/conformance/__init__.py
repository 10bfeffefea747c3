"""Differential conformance suite: the torch API the field calls, on our backend vs real PyTorch."""
