"""Migration tools: convert torchrun launch scripts to msrun, check features and the environment.

``convert-launch`` (:mod:`.convert`, parsing in :mod:`.bash`, torchrun's options in :mod:`.torchrun`,
the feature table in :mod:`.features`) and ``doctor`` (:mod:`.doctor`) share the version table of
:mod:`mindspeed_ms.versions` and the feature table shipped beside this file.
"""
