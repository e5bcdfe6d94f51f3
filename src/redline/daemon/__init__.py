"""The daemon: a Unix-socket JSON-RPC server per repository, and its client.

The client side (``paths``, ``protocol``, ``client``, ``lifecycle``) imports
neither pygit2, watchdog nor pydantic, so that the CLI starts fast.
"""
