"""One request path for every front end (``redline apply``, ``redline mcp``, the daemon).

decode → parse → settings → permission decision → target (a directory, or a daemon
session) → hints → a guarded result. A front end decodes what its caller sent,
hands it here, and decides only how to talk to its caller (how to ask a person,
how to print an answer); it holds no rule of its own.
"""
