"""The skills extension (``io.modelcontextprotocol/skills``): ``SKILL.md`` folders served as
resources.
"""
