"""The sans-IO protocol core: decoded JSON-RPC messages in, messages to send out.

Nothing in this package opens a socket, reads a stream or starts a task of its own.
Transports hand it Python dicts (decoded with orjson) and write what it returns.
"""
