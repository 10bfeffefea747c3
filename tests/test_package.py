"""The package root: lazy re-exports, a light import, the public API surface."""

from __future__ import annotations

import subprocess
import sys

import mindspeed_ms


def test_public_api_is_importable_from_the_root():
    from mindspeed_ms import ApplyReport, PatchRecord, PatchRegistry, PatchStatus
    from mindspeed_ms.errors import (
        AdaptationError,
        PatchApplyError,
        PatchConflictError,
        PatchValidationError,
        SignatureMismatchError,
        TargetNotFoundError,
    )

    assert PatchRegistry.__module__ == "mindspeed_ms.engine.registry"
    assert {PatchRecord.__name__, PatchStatus.__name__, ApplyReport.__name__} == {"PatchRecord", "PatchStatus",
                                                                                   "ApplyReport"}
    for error in (PatchValidationError, TargetNotFoundError, PatchConflictError, SignatureMismatchError,
                  PatchApplyError):
        assert issubclass(error, AdaptationError)
        assert error("x", target="a.b").target == "a.b"
    assert issubclass(PatchValidationError, ValueError)
    assert issubclass(TargetNotFoundError, LookupError)
    assert issubclass(SignatureMismatchError, TypeError)


def test_unknown_attribute_is_an_attribute_error():
    try:
        mindspeed_ms.NoSuchThing  # noqa: B018 - the access is the test
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_light():
    code = ("import sys; import mindspeed_ms; heavy = [m for m in ('typing', 'inspect', 'packaging', "
            "'importlib.metadata', 'mindspeed_ms.engine.registry', 'wrapt', 'dataclasses') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_py_typed_marker_ships():
    from importlib.resources import files

    assert files("mindspeed_ms").joinpath("py.typed").is_file()


def test_op_and_backend_errors_join_the_hierarchy():
    from mindspeed_ms.errors import (
        AdaptationError,
        BackendImportError,
        BackendNotInstalledError,
        OpArgumentError,
        OpDTypeError,
    )

    error = OpArgumentError("npu_gmm", "group_list", "expected to end at 9")
    assert isinstance(error, ValueError)
    assert isinstance(error, AdaptationError)
    assert (error.op, error.argument) == ("npu_gmm", "group_list")
    assert "'group_list'" in str(error)
    assert issubclass(OpDTypeError, TypeError)
    assert issubclass(OpDTypeError, AdaptationError)
    missing = BackendNotInstalledError("install it", name="msadapter")
    assert isinstance(missing, ModuleNotFoundError)
    assert missing.name == "msadapter"
    assert issubclass(BackendImportError, ImportError)


def test_a_downstream_snippet_type_checks_against_the_public_api(tmp_path):
    # `from mindspeed_ms import MindSporeAdaptation` must be the class for a downstream mypy run,
    # not `object` (issue 11 item 28).
    from pathlib import Path

    snippet = tmp_path / "downstream.py"
    snippet.write_text(
        "from mindspeed_ms import MindSporeAdaptation, PatchRecord, PatchRegistry\n"
        "from mindspeed_ms.errors import BlockedModuleError, OpError, TargetNotFoundError\n\n\n"
        "def port() -> PatchRecord:\n"
        "    patch: PatchRecord = MindSporeAdaptation.register('megatron.core.utils.f', None, create_dummy=True)\n"
        "    registry: PatchRegistry = MindSporeAdaptation.registry()\n"
        "    assert registry.is_applied in (True, False)\n"
        "    return patch\n\n\n"
        "def caught(error: Exception) -> bool:\n"
        "    return isinstance(error, (BlockedModuleError, OpError, TargetNotFoundError))\n")
    root = Path(mindspeed_ms.__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(snippet)],
        capture_output=True, text=True, cwd=tmp_path, env={**__import__("os").environ, "MYPYPATH": str(root)},
        timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_engine_modules_have_no_top_level_aliases():
    from pathlib import Path

    # Read the package directory, not find_spec: an editable install's finder may map names to another tree.
    root = Path(mindspeed_ms.__file__).parent
    old = ["registry", "applier", "patch", "patching", "hooks", "targets", "static", "static_index",
           "signatures", "requirements", "status"]
    assert [name for name in old if (root / f"{name}.py").exists()] == []


def test_the_errors_facade_re_exports_each_layers_own_classes():
    from mindspeed_ms import errors
    from mindspeed_ms.engine import errors as engine_errors
    from mindspeed_ms.migrate import errors as migrate_errors

    assert errors.PatchApplyError is engine_errors.PatchApplyError
    assert errors.LaunchScriptError is migrate_errors.LaunchScriptError
    assert not hasattr(engine_errors, "LaunchScriptError")
    assert not hasattr(engine_errors, "OpError")
