"""What every front end (``redline apply``, ``redline mcp``) runs for a request.

- :mod:`~redline.pipeline.runners`: a wire request in, its result out, whatever
  happens (embedded mode: parse, the folder's policy, apply, hints; a bug or a
  failure of the machine becomes the request's ``failed`` result);
- :mod:`~redline.pipeline.permission`: embedded mode's permission step, the
  verdict every caller reaches (``tools.permissions.verdict``; the daemon runs it
  for every ``apply`` it is sent, so a socket client cannot skip it);
- :mod:`~redline.pipeline.retries`: the repeated-failure hint of a turn across
  separate ``redline apply`` calls (a small state file in the user's cache);
- :mod:`~redline.pipeline.daemon_call`: a request sent to a daemon session, and
  every way that call can fail, in one wording.

A front end decodes what its caller sent, hands it here, and decides only how
to talk to its caller (how to ask a person, how to print an answer).
"""
