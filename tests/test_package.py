"""The package root: lazy re-exports, a light import, the public API surface."""

from __future__ import annotations

import subprocess
import sys

import mindspeed_ms


def test_public_api_is_importable_from_the_root():
    from mindspeed_ms import ApplyReport, Patch, PatchRegistry, PatchStatus
    from mindspeed_ms.errors import (
        AdaptationError,
        PatchApplyError,
        PatchConflictError,
        PatchValidationError,
        SignatureMismatchError,
        TargetNotFoundError,
    )

    assert PatchRegistry.__module__ == "mindspeed_ms.engine.registry"
    assert {Patch.__name__, PatchStatus.__name__, ApplyReport.__name__} == {"Patch", "PatchStatus", "ApplyReport"}
    for error in (PatchValidationError, TargetNotFoundError, PatchConflictError, SignatureMismatchError,
                  PatchApplyError):
        assert issubclass(error, AdaptationError)
        assert error("x", target="a.b").target == "a.b"
    assert issubclass(PatchValidationError, ValueError) and issubclass(TargetNotFoundError, LookupError)
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
    assert isinstance(error, ValueError) and isinstance(error, AdaptationError)
    assert (error.op, error.argument) == ("npu_gmm", "group_list") and "'group_list'" in str(error)
    assert issubclass(OpDTypeError, TypeError) and issubclass(OpDTypeError, AdaptationError)
    missing = BackendNotInstalledError("install it", name="msadapter")
    assert isinstance(missing, ModuleNotFoundError) and missing.name == "msadapter"
    assert issubclass(BackendImportError, ImportError)
