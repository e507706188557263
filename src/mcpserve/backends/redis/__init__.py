"""Redis: the subscription bus, handshake-era sessions and task records, shared by every
process of a server.
"""
