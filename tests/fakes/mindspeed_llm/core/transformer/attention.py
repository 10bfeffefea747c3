class Attention:
    def __init__(self, config, submodules, layer_number, attn_mask_type, attention_type):
        self.origin = "pytorch"

    def forward(self, hidden_states, attention_mask, key_value_states=None):
        return ("pytorch", "forward")


class DotProductAttention:
    def forward(self, query, key, value, attention_mask, attn_mask_type=None):
        return ("pytorch", "forward")
