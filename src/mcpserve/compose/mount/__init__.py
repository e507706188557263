"""Mounting: one server's entries served by another, under a namespace, following the child's
changes.
"""
