"""The server side: tools, prompts, resources and the handlers that serve them."""
