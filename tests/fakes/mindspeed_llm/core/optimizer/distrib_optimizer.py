class DistributedOptimizer:
    def __init__(self, optimizer, config, grad_scaler, init_state_fn, model_chunks, per_model_buffers):
        self.origin = "pytorch"

    def get_parameter_state_dp_zero(self):
        return ("pytorch", "get_parameter_state_dp_zero")

    def load_parameter_state_from_dp_zero(self, state_dict, *, update_legacy_format=False):
        return ("pytorch", "load_parameter_state_from_dp_zero")
