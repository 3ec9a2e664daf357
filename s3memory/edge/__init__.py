"""What the edges share: one call's answer as each gives it (``answers``: the SDK adapters, the MCP
server, the Lambda functions) and the HTTP edges' check of a bearer token (``tokens``: the memory
function, the MCP server over HTTP and on Lambda). The edges themselves are ``tool.py``, ``mcp/`` and
``aws_lambda/``."""
