"""Fixtures of the daemon tests: a real repository, and one with a redline CLI whose daemon
is stopped afterwards."""

from __future__ import annotations

from gitmode_fixtures import gm
from support.repos import repo

__all__ = ["gm", "repo"]
