"""Redis: the subscription bus, handshake-era sessions, task records and the key-value store,
shared by every process of a server.
"""
