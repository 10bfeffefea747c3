"""Tests of mindspeed_ms.engine.sites: the one walk up the caller's frames (stacklevel, frames looked through)."""

from __future__ import annotations

import inspect

from mindspeed_ms.engine.sites import caller_frame, caller_site


def _here() -> int:
    frame = inspect.currentframe()
    assert frame is not None
    assert frame.f_back is not None
    return frame.f_back.f_lineno


def _site_of_my_caller() -> str:
    return caller_site()


def _site_two_up() -> str:
    return _helper_registering_for_its_caller()


def _helper_registering_for_its_caller() -> str:
    return caller_site(2)


def test_stacklevel_one_is_the_line_calling_the_function_that_asks() -> None:
    site, line = _site_of_my_caller(), _here()
    assert site == f"{__file__}:{line}"


def test_stacklevel_two_is_the_line_calling_the_helper() -> None:
    site, line = _site_two_up(), _here()
    assert site == f"{__file__}:{line}"


def test_frames_the_predicate_rejects_are_looked_through() -> None:
    def facade() -> str:
        return forwarding()

    def forwarding() -> str:
        return caller_site(skip=lambda frame: frame.f_code.co_name in ("forwarding", "facade"))

    site, line = facade(), _here()
    assert site == f"{__file__}:{line}"


def test_a_stack_shallower_than_asked_gives_no_frame() -> None:
    assert caller_frame(10_000) is None
    assert caller_site(10_000) == "?"


def test_a_counting_shim_between_the_caller_and_the_registering_function_is_looked_through() -> None:
    # MINDSPEED_MS_TRACE puts a counting shim over every patched function, MindSpeed's register_patch included:
    # the site must stay the caller's line, not the shim's call-through in the engine's journal
    from types import SimpleNamespace

    from mindspeed_ms.engine.journal import counting_shim

    counter = SimpleNamespace(calls=0)
    shimmed = counting_shim(_site_of_my_caller, counter, "tests.test_sites._site_of_my_caller", False)
    site, line = shimmed(), _here()
    assert counter.calls == 1
    assert site == f"{__file__}:{line}"
