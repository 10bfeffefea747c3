class VocabParallelEmbedding:
    def __init__(self, num_embeddings, embedding_dim, *, init_method=None, config=None):
        self.origin = "pytorch"
