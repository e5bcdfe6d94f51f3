"""redline: explainable, atomic, reviewable code-agent edits."""

__version__ = "0.1.0"
