"""Stand-in for ``mindspeed.op_builder``: builders whose kernels cannot run (no torch_npu extension)."""


class _UnloadableKernels:
    def __init__(self, builder):
        self._builder = builder

    def __getattr__(self, kernel):
        def kernel_call(*args, **kwargs):
            raise NotImplementedError(f"{self._builder}.{kernel}: the torch_npu C++ extension is not available")

        return kernel_call


class _OpBuilder:
    def load(self):
        return _UnloadableKernels(type(self).__name__)


class LcalOpBuilder(_OpBuilder):
    pass


class MatmulAddOpBuilder(_OpBuilder):
    pass


class GMMOpBuilder(_OpBuilder):
    pass


class GMMV2OpBuilder(_OpBuilder):
    pass


class RotaryPositionEmbeddingOpBuilder(_OpBuilder):
    pass


class MoeTokenPermuteOpBuilder(_OpBuilder):
    pass


class MoeTokenUnpermuteOpBuilder(_OpBuilder):
    pass


class FusionAttentionV2OpBuilder(_OpBuilder):
    pass


class RingAttentionUpdateOpBuilder(_OpBuilder):
    pass
