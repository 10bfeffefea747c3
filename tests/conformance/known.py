"""Cases known to diverge today, with why. The test of each is a strict xfail: it fails as soon as the case
conforms (then delete the entry). The report lists them as divergent. Fixing one = conform it, or make it a loud
typed error of ours, and remove it from here."""

from __future__ import annotations

KNOWN_DIVERGENT: dict[str, str] = {
}
