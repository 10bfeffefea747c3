"""Stand-in for MindSpeed-LLM's feature list and the step of its adaptor that patches them in."""

from mindspeed.features_manager.recompute import RecomputeFeature

from mindspeed_llm.features_manager.ai_framework.ms_patch_feature import MindSporePatchFeature

FEATURES = [RecomputeFeature(), MindSporePatchFeature()]


def patch_features(argv=None):
    from mindspeed.features_manager.features_manager import MindSpeedFeaturesManager

    args = MindSpeedFeaturesManager.parse_args(FEATURES, argv)
    MindSpeedFeaturesManager.apply_features_patches(FEATURES, args)
    return args
