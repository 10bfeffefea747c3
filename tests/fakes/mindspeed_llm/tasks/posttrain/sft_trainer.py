class SFTTrainer:
    def get_batch(self, data_iterator):
        return ("pytorch", "get_batch")

    def loss_func(self, input_tensor, output_tensor):
        return ("pytorch", "loss_func")
