def apply_llama3_scaling(freqs):
    return ("pytorch", "apply_llama3_scaling")


class RotaryEmbedding:
    def forward(self, max_seq_len, offset=0, packed_seq=False):
        return ("pytorch", "forward")


class YarnRotaryPositionEmbedding:
    class Scaling:
        @staticmethod
        def yarn_linear_ramp_mask(low, high, dim):
            return ("pytorch", "yarn_linear_ramp_mask")
