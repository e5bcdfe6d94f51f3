"""Git mode on pygit2: sessions, snapshots, per-group commits, notes, the journal.

Every function here takes the repository (or paths) as arguments; nothing reads
the environment or the current directory. pygit2 objects are not thread-safe:
callers use one thread per repository.
"""
