def deallocate_output_tensor(out, deallocate_pipeline_outputs=False):
    return ("pytorch", "deallocate_output_tensor")


def forward_backward_pipelining_without_interleaving(*, forward_step_func, data_iterator, model, num_microbatches,
                                                     seq_length, micro_batch_size, forward_only=False):
    return ("pytorch", "forward_backward_pipelining_without_interleaving")
