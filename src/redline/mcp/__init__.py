"""``redline mcp``: the tool surface served to an agent over stdio (Model Context Protocol).

A client of the daemon like the CLI: in git mode each tool call goes to a daemon
session, embedded it applies under a folder in this process. Modules:
``server`` (the MCP handlers and the stdio loop), ``backend`` (where a request
goes), ``allowances`` (permissions, with what a person allowed during the server's life),
``text`` (the short text a model reads), ``naming`` (the session named for the client).
"""
