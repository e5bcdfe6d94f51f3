"""Fixtures of the in-process git-mode tests: a real repository built with git."""

from __future__ import annotations

from support.repos import repo

__all__ = ["repo"]
