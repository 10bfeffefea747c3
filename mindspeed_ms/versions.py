"""The version table of MindSpeed's MindSpore backend, in one place.

Section 1 of the MindSpeed migration guide pairs MindSpeed 2.2.0_core_r0.12.1 with Megatron
core_r0.12.1, CANN 8.3.RC1, MindSpore 2.7.1, MSAdapter ``master`` and Python 3.9 / 3.10. This module
holds that table (:data:`VERSION_TABLE`), the versions that install from PyPI for it, and the PEP 508
ranges the built-in patch providers declare in ``requires=`` (so ``mindspeed-ms doctor`` and the
patches read the same data).

Data only: it imports nothing, because :mod:`mindspeed_ms.adaptation` and the providers read it on
the import path of a training script. Annotations are strings (``typing`` is not loaded).
"""

from __future__ import annotations

__all__ = [
    "MINDSPEED_VERSION", "MINDSPEED_DIST_VERSION", "MEGATRON_BRANCH", "MEGATRON_CORE_VERSION", "CANN_VERSION",
    "MINDSPORE_VERSION",
    "MSADAPTER_BRANCH", "MSADAPTER_VERSION", "PYTHON_VERSIONS",
    "MINDSPORE_REQUIREMENT", "MSADAPTER_REQUIREMENT", "MEGATRON_CORE_REQUIREMENT", "MINDSPEED_REQUIREMENT",
    "MEGATRON_LM_REQUIREMENT",
    "MINDSPORE_INSTALL", "MSADAPTER_INSTALL", "MEGATRON_CORE_INSTALL",
    "VERSION_TABLE", "is_supported_python", "python_versions_text",
]

# --- the seed's table (section 1) -------------------------------------------------------------------

#: MindSpeed release the table describes (code branch ``master``).
MINDSPEED_VERSION = "2.2.0_core_r0.12.1"
#: The version an installed MindSpeed 2.2.0 reports (``importlib.metadata.version("mindspeed")``):
#: MindSpeed's setup.py sets it to the Megatron core it pairs with, on every 2.x and 26.x release
#: branch for core_r0.12.1 (``__version__ = '0.12.1'``), not to the release name.
MINDSPEED_DIST_VERSION = "0.12.1"
#: Megatron-LM branch MindSpeed 2.2.0 pairs with.
MEGATRON_BRANCH = "core_r0.12.1"
#: The megatron-core release on PyPI cut from that branch.
MEGATRON_CORE_VERSION = "0.12.1"
#: CANN toolkit version (``version=`` in ``<toolkit>/<arch>-linux/ascend_toolkit_install.info``).
CANN_VERSION = "8.3.RC1"
#: MindSpore release.
MINDSPORE_VERSION = "2.7.1"
#: The table names MSAdapter's source branch, not a release.
MSADAPTER_BRANCH = "master"
#: The PyPI build of MSAdapter that works with MindSpore 2.7.1 (``master`` is not on PyPI).
MSADAPTER_VERSION = "0.5.0b1"
#: Python (major, minor) versions MindSpeed 2.2.0 supports.
PYTHON_VERSIONS: tuple[tuple[int, int], ...] = ((3, 9), (3, 10))

# --- ranges the patch providers require (PEP 508) ----------------------------------------------------
# Wider than the pins above: a range says which releases the patches were written against and still
# fit; the pins say what the table pairs. Each pin lies inside its range (tests/test_versions.py).

#: MindSpore 2.7.x is the table's; 2.10.0 was also seen running the patched code (ENVIRONMENT.md).
MINDSPORE_REQUIREMENT = "mindspore>=2.7,<2.11"
#: The 0.5 pre-releases are the MSAdapter builds MindSpore 2.7 installs with.
MSADAPTER_REQUIREMENT = "msadapter>=0.5.0b1,<0.6"
#: Every 0.12 patch release of megatron-core comes from the core_r0.12 branches.
MEGATRON_CORE_REQUIREMENT = "megatron-core>=0.12,<0.13"
#: The MindSpeed releases for Megatron core 0.12 (2.1.0 to 2.3.0 and 26.x ``_core_r0.12.1``), whose
#: ``mindspeed.ops`` entry points the ``mindspeed`` provider replaces. Written in the version those
#: distributions report (see :data:`MINDSPEED_DIST_VERSION`), not the release name.
MINDSPEED_REQUIREMENT = "mindspeed>=0.12,<0.13"
#: Megatron-LM's training package (``megatron.training``, ``megatron.legacy``): never a distribution, always a
#: source checkout on ``PYTHONPATH`` beside the megatron-core wheel; met when ``megatron.training`` is importable.
MEGATRON_LM_REQUIREMENT = "megatron-lm"

# --- how to install the pins --------------------------------------------------------------------------

MINDSPORE_INSTALL = f"pip install mindspore=={MINDSPORE_VERSION} 'numpy<2'"
#: MSAdapter does not declare its typing_extensions dependency.
MSADAPTER_INSTALL = f"pip install msadapter=={MSADAPTER_VERSION} typing_extensions"
#: megatron-core's declared dependencies pull in a real torch, which MSAdapter cannot live beside.
MEGATRON_CORE_INSTALL = f"pip install --no-deps megatron-core=={MEGATRON_CORE_VERSION} einops packaging"

#: (component, the seed's entry, what to install for it) — the table as section 1 shows it.
VERSION_TABLE: tuple[tuple[str, str, str], ...] = (
    ("MindSpeed", MINDSPEED_VERSION, "not on PyPI: MindSpeed-Core-MS, branch master"),
    ("Megatron", MEGATRON_BRANCH, f"megatron-core=={MEGATRON_CORE_VERSION}"),
    ("CANN", CANN_VERSION, "Ascend-cann-toolkit + kernels (Ascend machines only)"),
    ("MindSpore", MINDSPORE_VERSION, f"mindspore=={MINDSPORE_VERSION}"),
    ("MSAdapter", MSADAPTER_BRANCH, f"msadapter=={MSADAPTER_VERSION}"),
    ("Python", "3.9.x, 3.10.x", "CPython 3.9 or 3.10"),
)


def is_supported_python(version: tuple[int, ...]) -> bool:
    """Return whether a Python version is one MindSpeed 2.2.0 supports (3.9.x or 3.10.x).

    Args:
        version: ``sys.version_info`` or any tuple starting with (major, minor).

    Returns:
        True for 3.9.x and 3.10.x.
    """
    return tuple(version[:2]) in PYTHON_VERSIONS


def python_versions_text() -> str:
    """Return the supported Python versions for a person: ``"3.9.x or 3.10.x"``."""
    return " or ".join(f"{major}.{minor}.x" for major, minor in PYTHON_VERSIONS)
