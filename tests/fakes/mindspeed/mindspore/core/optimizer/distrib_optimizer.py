"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def get_parameter_state_dp_zero(self):
    return ("mindspore", "get_parameter_state_dp_zero")


def load_parameter_state_from_dp_zero(self, state_dict, *, update_legacy_format=False):
    return ("mindspore", "load_parameter_state_from_dp_zero")
