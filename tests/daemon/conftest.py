"""Fixtures of the daemon tests: a real repository and a real daemon, stopped afterwards."""

from __future__ import annotations

from gitmode_fixtures import gm

__all__ = ["gm"]
