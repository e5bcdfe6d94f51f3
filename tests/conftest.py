"""Shared test configuration.

Hypothesis runs deterministically (the "ci" profile) so that a failure seen once
is seen on every run and on every machine.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200, database=None)
settings.load_profile("ci")
