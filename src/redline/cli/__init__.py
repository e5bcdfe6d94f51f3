"""The ``redline`` command line (click). Heavy modules are imported inside commands."""
