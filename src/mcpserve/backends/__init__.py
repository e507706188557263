"""Storage that outlives a process: implementations of the stores and the bus that the server,
the extensions and the transports declare.
"""
