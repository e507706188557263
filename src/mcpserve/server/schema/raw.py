"""A tool's hand-written JSON Schema (``input_schema=``, or a transformation's ``schema=``)."""

from __future__ import annotations

from typing import Any

DIALECT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class RawSchema:
    """A hand-written JSON Schema: checked at registration, enforced on every call.

    Only the 2020-12 dialect is supported, and ``$ref`` never leaves the document: no
    retrieval is configured (``docs/decisions.md``, "Schemas").
    """

    def __init__(self, tool: str, schema: dict[str, Any]) -> None:
        import jsonschema

        dialect = schema.get("$schema", DIALECT_2020_12)
        if dialect.rstrip("#") != DIALECT_2020_12:
            raise ValueError(
                f"Tool {tool!r}: JSON Schema dialect {dialect!r} is not supported; "
                f"use {DIALECT_2020_12}"
            )
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"Tool {tool!r}: invalid JSON Schema: {exc.message}") from None
        self._validator = jsonschema.Draft202012Validator(schema)

    def problems(self, instance: Any) -> list[str]:
        """Why ``instance`` does not fit, one entry per problem (empty when it fits)."""
        errors = sorted(self._validator.iter_errors(instance), key=lambda e: list(e.path))[:10]
        return [
            f"{'.'.join(map(str, error.path)) or 'arguments'}: {error.message}" for error in errors
        ]
