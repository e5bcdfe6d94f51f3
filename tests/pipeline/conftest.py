"""Fixtures of the tests that run one table through every front end: a real repository
with a redline CLI whose daemon is stopped afterwards."""

from __future__ import annotations

from gitmode_fixtures import gm

__all__ = ["gm"]
