"""The tasks extension (``io.modelcontextprotocol/tasks``): tools that outlive their request."""
