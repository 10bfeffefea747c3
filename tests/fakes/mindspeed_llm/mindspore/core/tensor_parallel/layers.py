"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def vocab_embedding_init_func(self, num_embeddings, embedding_dim, *, init_method=None, config=None):
    return ("mindspore", "vocab_embedding_init_func")
