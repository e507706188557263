"""mcpserve as an OAuth authorization server for MCP clients (in front of an identity
provider). Its parts are built here one at a time; :mod:`.signing` is the first."""
