"""Cases known to diverge today, with why. The test of each is a strict xfail: it fails as soon as the case
conforms (then delete the entry). The report lists them as divergent. Fixing one = conform it, or make it a loud
typed error of ours, and remove it from here."""

from __future__ import annotations

KNOWN_DIVERGENT: dict[str, str] = {
    "arith.int_by_int_division_is_float32": "MSAdapter: int / int gives float64",
    "arith.zero_dim_division": "MSAdapter on CPU: 0-d division raises 'Expected a NumPy array'",
    "inplace_arith.iadd_alias_sees_update": "+= is out of place on the CPU backend",
    "inplace_arith.iadd_on_slice_reaches_base": "+= is out of place on the CPU backend",
    "inplace_arith.int_div_inplace_refuses_float_result": "integer in-place ops with a float result truncate",
}
