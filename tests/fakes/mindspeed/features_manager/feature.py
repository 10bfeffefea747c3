"""Stand-in for ``mindspeed.features_manager.feature``: the base class of MindSpeed's features."""


class MindSpeedFeature:
    def __init__(self, feature_name, optimization_level=2):
        self.feature_name = feature_name.lower().strip().replace("-", "_")
        self.optimization_level = optimization_level

    def register_args(self, parser):
        """Declare the feature's flags on an argparse parser."""

    def register_patches(self, patch_manager, args):
        """Register the feature's patches through ``patch_manager`` (MindSpeed's manager class)."""
