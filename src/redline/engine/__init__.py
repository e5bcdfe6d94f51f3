"""The pure core: decoding, normalisation, the match chain and the edit tool.

Nothing in this package touches the file system, git, sockets or threads:
functions take text or bytes in and hand results back.
"""
