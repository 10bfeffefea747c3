from mindspeed.op_builder import GMMOpBuilder, _OpBuilder


class GMMV2OpBuilder(_OpBuilder):
    pass


__all__ = ["GMMOpBuilder", "GMMV2OpBuilder"]
