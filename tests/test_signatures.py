from __future__ import annotations

from mindspeed_ms.engine.signatures import signature_problems


def original(a, b, *, c=1):
    return a


def test_compatible_replacement_has_no_problems():
    def same(a, b, *, c=1):
        return a

    def broader(*args, **kwargs):
        return 0

    assert signature_problems(original, same) == []
    assert signature_problems(original, broader) == []


def test_fewer_positional_slots_is_reported():
    def narrow(a, *, b=None, c=1):
        return a

    problems = signature_problems(original, narrow)
    assert any("positional" in p for p in problems)


def test_missing_keyword_is_reported_by_name():
    def renamed(a, bb, *, c=1):
        return a

    assert any("'b'" in p for p in signature_problems(original, renamed))


def test_missing_varargs_and_varkw_are_reported():
    def loose(*args, **kwargs):
        return 0

    def strict(x):
        return x

    problems = signature_problems(loose, strict)
    assert any("*args" in p for p in problems)
    assert any("**kwargs" in p for p in problems)


def test_extra_required_parameter_is_reported():
    def needy(a, b, d, *, c=1):
        return a

    assert any("'d'" in p for p in signature_problems(original, needy))


def test_c_functions_are_skipped():
    assert signature_problems(min, lambda: 0) == []  # min has no introspectable signature


def test_descriptors_are_unwrapped():
    def method(self, x):
        return x

    assert signature_problems(staticmethod(lambda x: x), lambda x: x) == []
    assert signature_problems(classmethod(method), method) == []


# -- a parameter that loses its default (issue 11 item 24) -----------------------------------------
def test_a_positional_parameter_losing_its_default_is_reported() -> None:
    def original(x, mode=0):
        pass

    def replacement(x, mode):
        pass

    problems = signature_problems(original, replacement)
    assert len(problems) == 1
    assert "'mode'" in problems[0]
    assert "default" in problems[0]


def test_a_keyword_only_parameter_losing_its_default_is_reported() -> None:
    def original(x, *, mode=0):
        pass

    def replacement(x, *, mode):
        pass

    problems = signature_problems(original, replacement)
    assert len(problems) == 1
    assert "keyword-only parameter 'mode'" in problems[0]


def test_a_parameter_keeping_its_default_is_fine() -> None:
    def original(x, mode=0, *, flag=False):
        pass

    def replacement(x, mode=1, *, flag=True):
        pass

    assert signature_problems(original, replacement) == []


def test_losing_a_default_is_a_warning_at_apply(reg, modules) -> None:  # type: ignore[no-untyped-def]
    mod = modules.load("sig_default", "def f(x, mode=0):\n    return x\n")

    def strict_f(x, mode):
        return x

    reg.register("sig_default.f", strict_f)
    reg.apply()
    [status] = reg.status()
    assert status.state == "applied"
    assert any("'mode'" in warning for warning in status.warnings)
    assert mod.f is strict_f
