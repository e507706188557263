"""Handshake-era sessions over HTTP: where they live, and how the processes serving one talk."""
