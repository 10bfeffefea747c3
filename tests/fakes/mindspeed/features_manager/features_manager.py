"""Stand-in for ``mindspeed.features_manager.features_manager``: parse the features' flags, register, apply."""

import argparse
import sys

from mindspeed.patch_utils import MindSpeedPatchesManager


def _megatron_flags(parser):
    """The few Megatron/MindSpeed flags the stand-in adaptation reads (the real parser has them all)."""
    for flag in ("--moe-fb-overlap", "--swap-optimizer", "--moe-grouped-gemm", "--use-ascend-coc"):
        parser.add_argument(flag, action="store_true", default=False)


class MindSpeedFeaturesManager:
    @staticmethod
    def parse_args(features, argv=None):
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        _megatron_flags(parser)
        for feature in features:
            feature.register_args(parser)
        known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        return known

    @staticmethod
    def register_features_patches(features, args):
        for feature in features:
            feature.register_patches(MindSpeedPatchesManager, args)

    @staticmethod
    def apply_features_patches(features, args):
        MindSpeedFeaturesManager.register_features_patches(features, args)
        MindSpeedPatchesManager.apply_patches()
