"""mindspeed_ms's start-up hook: ``mindspeed-ms run`` puts this folder first on ``PYTHONPATH``.

Python imports ``sitecustomize`` at start-up (``site``), so every Python process started under
``mindspeed-ms run`` (msrun's and torchrun's workers, a plain ``python``) imports
``mindspeed_ms.adaptor`` before its own code runs, scripts unchanged: the way ``ddtrace-run`` and
``opentelemetry-instrument`` get in. Each process decides its framework as a script importing the
adaptor would (its own ``--ai-framework`` flag, else ``MINDSPEED_AI_FRAMEWORK``); in PyTorch mode the
adaptor imports nothing heavy. Launchers (msrun, torchrun) are left alone: only their workers train; so is
multiprocessing's resource tracker (``python -c "from multiprocessing.resource_tracker import main;..."``), which
runs none of the user's code.

The ``sitecustomize`` this one hides (the next on ``sys.path``) still runs, after the adaptor (in
MindSpore mode nothing may import torch before it). The ``mindspeed_ms`` imported is the one beside
this file, the launcher's own, whatever else the process's ``sys.path`` holds.

This file is never imported as part of ``mindspeed_ms``: it must stay cheap and self-contained.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(os.path.dirname(_HERE))  # .../mindspeed_ms
#: Entry points that only start workers: the adaptor is for the workers (their ``--ai-framework``
#: often shows on the launcher's command line too).
_LAUNCHER_SCRIPTS = ("msrun", "torchrun")
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "mindspore.parallel.cluster.run")
#: ``python -c`` programs of Python's own helper processes, which never run the user's code and never import torch:
#: multiprocessing's resource tracker (each process of a tree that makes a semaphore or a shared-memory block
#: before one exists starts one; under MSAdapter's DataLoader every forked worker does, and adapting each one
#: imported MindSpore there: ~4 s of CPU apiece, seven of them beside Megatron-LM's first training steps).
_HELPER_CODE = ("from multiprocessing.resource_tracker import main",)
#: Interpreter options that take a value as the next argument.
_OPTIONS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")


def _entry() -> "tuple[str, str]":
    """Return what this interpreter runs: ``("module", name)``, ``("script", path)``, ``("code", program)`` (the
    program given to ``-c``; empty for standard input)."""
    argv = list(getattr(sys, "orig_argv", None) or [])[1:]
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "-m":
            return ("module", argv[index + 1] if index + 1 < len(argv) else "")
        if token.startswith("-m") and len(token) > 2:
            return ("module", token[2:])
        if token == "-c":
            return ("code", argv[index + 1] if index + 1 < len(argv) else "")
        if token.startswith("-c") or token == "-":
            return ("code", token[2:])
        if token in _OPTIONS_WITH_VALUE:
            index += 2
            continue
        if token.startswith("-"):
            index += 1
            continue
        return ("script", token)
    if not argv and sys.argv and sys.argv[0]:  # Python 3.9 has no orig_argv
        return ("script", sys.argv[0])
    return ("code", "")


def _is_launcher() -> bool:
    kind, name = _entry()
    if kind == "module":
        return name in _LAUNCHER_MODULES
    return kind == "script" and os.path.basename(name) in _LAUNCHER_SCRIPTS


def _load_package() -> None:
    """Make ``import mindspeed_ms`` give the package beside this file (nothing else is put on ``sys.path``)."""
    if "mindspeed_ms" in sys.modules:
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "mindspeed_ms", os.path.join(_PACKAGE, "__init__.py"), submodule_search_locations=[_PACKAGE])
    if spec is None or spec.loader is None:  # pragma: no cover - the file is there: we are inside it
        raise ImportError(f"mindspeed_ms's bootstrap cannot load the package at {_PACKAGE}", name="mindspeed_ms")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mindspeed_ms"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["mindspeed_ms"]
        raise


def _adapt() -> None:
    """Import ``mindspeed_ms.adaptor``; when that fails, say why on stderr and end the process (status 1).

    A script that imports the adaptor itself stops on the same error; going on would only fail later,
    less clearly (e.g. ``import torch`` on the CPU without MSAdapter first).
    """
    try:
        _load_package()
        import mindspeed_ms.adaptor  # noqa: F401 - imported for its effect
    except Exception as error:  # every failure ends the process, below
        import logging
        import traceback

        logger = logging.getLogger("mindspeed_ms.bootstrap")
        if not logger.handlers and not logging.getLogger().handlers:
            logger.addHandler(logging.StreamHandler(sys.stderr))
        kind, name = _entry()
        logger.error("mindspeed-ms run: importing mindspeed_ms.adaptor failed in process %d (%s %s): %s: %s\n%s",
                     os.getpid(), kind, name, type(error).__name__, error, "".join(traceback.format_exc()))
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(1)  # SystemExit here would be reported by Python as a fatal start-up error


def _chain() -> None:
    """Run the ``sitecustomize`` this one hides (the next one on ``sys.path``), as Python would have."""
    import importlib.machinery
    import importlib.util

    others = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # site's own rule for a failing sitecustomize: report and go on
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(error).__name__}: "
                         f"{error}\n")


def _is_helper() -> bool:
    kind, program = _entry()
    return kind == "code" and program.lstrip().startswith(_HELPER_CODE)


if sys.version_info >= (3, 9) and not _is_launcher() and not _is_helper():
    _adapt()
_chain()
