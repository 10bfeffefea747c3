def get_batch_on_this_tp_rank(data_iterator):
    return ("pytorch", "get_batch_on_this_tp_rank")


def _compute_actual_seq_len(origin_seq):
    return ("pytorch", "_compute_actual_seq_len")
