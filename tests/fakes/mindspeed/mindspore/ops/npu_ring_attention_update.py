"""MindSpore replacement (stand-in), shaped like the real module: a proxy whose method calls MindSpore's kernel."""


class _RingAttentionProxy:
    def npu_ring_attention_update(self, *args, **kwargs):
        return ("mindspore", "npu_ring_attention_update")


_RING_PROXY = _RingAttentionProxy()


def _ring_atten_patched_load(*_args, **_kwargs):
    return _RING_PROXY
