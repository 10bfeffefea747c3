class AdamW:
    def step(self, closure=None):
        return ("pytorch", "step")


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_tensor, *, amsgrad, beta1, beta2, lr,
          weight_decay, eps, maximize):
    """As MindSpeed's: one torch._fused_adamw_ call per parameter, the shared step tensor already incremented."""
    import torch  # the real module imports torch and torch_npu at the top

    for i, param in enumerate(params):
        torch._fused_adamw_([param], [grads[i]], [exp_avgs[i]], [exp_avg_sqs[i]],
                            [max_exp_avg_sqs[i]] if amsgrad else [], [step_tensor], amsgrad=amsgrad, lr=lr,
                            beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps, maximize=maximize)
