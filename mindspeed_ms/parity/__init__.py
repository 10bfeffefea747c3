"""Parity's library: does a training script compute on MindSpore what it computes on PyTorch?

capture (in each run's processes: dumps, hand-over of parameters and batches; the adaptation installs it),
compare (the dumps, per step), processes (a run's whole process tree), errors. The command that starts both runs
(``mindspeed-ms parity``) sits above the adaptation, in :mod:`mindspeed_ms.bootstrap.parity_runner`.
"""
