class _AllToAll:
    @staticmethod
    def forward(ctx, group, input, output_split_sizes, input_split_sizes):
        return ("pytorch", "forward")
