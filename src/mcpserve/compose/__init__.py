"""Servers made of other servers: mounted under a namespace, tools transformed, an OpenAPI
document as tools.
"""
