from __future__ import annotations

from mindspeed_ms.signatures import signature_problems


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
    assert any("*args" in p for p in problems) and any("**kwargs" in p for p in problems)


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
