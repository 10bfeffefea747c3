class VocabParallelCrossEntropy:
    @staticmethod
    def calculate_predicted_logits(vocab_parallel_logits, target, logits_max, vocab_start_index, vocab_end_index):
        return ("pytorch", "calculate_predicted_logits")

    @staticmethod
    def prepare_gradient_calculation_operands(softmax, target_mask):
        return ("pytorch", "prepare_gradient_calculation_operands")
