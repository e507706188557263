"""The extensions mcpserve serves beside the protocol's core: tasks, skills and MCP Apps."""
