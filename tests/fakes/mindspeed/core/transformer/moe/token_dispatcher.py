def preprocess(self, indices, *args, **kwargs):
    return ("pytorch", "preprocess")


class MoEAlltoAllSeqOverLapDispatcher:
    def token_permutation(self, hidden_states, probs, indices):
        return ("pytorch", "token_permutation")
