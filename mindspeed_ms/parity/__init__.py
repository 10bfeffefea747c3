"""Parity: does a training script compute on MindSpore what it computes on PyTorch?"""
