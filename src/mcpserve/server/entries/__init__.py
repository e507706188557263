"""What a server offers, one entry each: tools, resources and templates, prompts, completers,
and the function-backed entry they share.
"""
