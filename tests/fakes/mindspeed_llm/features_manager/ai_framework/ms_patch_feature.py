"""Stand-in for MindSpeed-LLM's ``MindSporePatchFeature``: the MindSpore adaptation as a MindSpeed feature."""

from mindspeed.features_manager.feature import MindSpeedFeature

from mindspeed_llm.mindspore.mindspore_adaptor_v2 import mindspore_register_args


class MindSporePatchFeature(MindSpeedFeature):
    def __init__(self):
        super().__init__("mindspore-patch", optimization_level=0)

    def register_args(self, parser):
        group = parser.add_argument_group(title=self.feature_name)
        group.add_argument('--ai-framework', type=str, default='pytorch', help='pytorch or mindspore')
        mindspore_register_args(group)

    def register_patches(self, patch_manager, args):
        if getattr(args, "ai_framework", None) != "mindspore":
            return
        from mindspeed_llm.mindspore.mindspore_adaptor_v2 import mindspore_adaptation
        mindspore_adaptation(patch_manager, args)
