"""Embedded mode: requests applied to a plain directory, without git or a daemon."""
