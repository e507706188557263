"""Function signatures as JSON Schema: arguments validated, results serialized, and
registration errors said plainly.
"""
