"""The per-request context a handler receives, and the questions it may put to the client
(multi round-trip requests, elicitation forms).
"""
