"""Transports frame bytes; the protocol core decides what they mean."""
