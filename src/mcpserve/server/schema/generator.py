"""Pydantic's JSON Schema generator, minus the titles it derives from names.

Its own module because defining it loads ``pydantic.json_schema`` and with it pydantic's
schema machinery: :mod:`.json_schema` and :mod:`.schema` import it when they first build a
schema, so ``import mcpserve`` loads none of that (a server pays for it at its first
registration, a client or the ``mcpserve`` command never).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonRef, JsonSchemaValue, JsonSchemaWarningKind

#: Schema kinds that carry a class, whose name pydantic would make a title.
_CLASS_SCHEMAS = frozenset({"model", "dataclass", "typed-dict", "enum"})


class CleanJsonSchemaGenerator(GenerateJsonSchema):
    """Pydantic's generator minus the titles it derives from field and class names."""

    # A sentinel default (``_MISSING = object()``) is a normal Python idiom: leave it out of the
    # schema quietly instead of warning at every registration. (Declared as in the base class.)
    ignored_warning_kinds: set[JsonSchemaWarningKind] = {  # noqa: RUF012
        "skipped-choice",
        "non-serializable-default",
    }

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate_inner(self, schema: Any) -> JsonSchemaValue:
        result = super().generate_inner(schema)
        # Class titles are added after the type-specific method returns (for enums by a hook
        # that edits the stored definition), so they are removed here, from the definition.
        if schema.get("type") in _CLASS_SCHEMAS and (cls := schema.get("cls")) is not None:
            ref = result.get("$ref")
            target = self.get_schema_from_definitions(JsonRef(ref)) if ref else result
            config = getattr(cls, "model_config", None) or getattr(cls, "__pydantic_config__", {})
            explicit = isinstance(config, Mapping) and (
                config.get("title") is not None or config.get("model_title_generator") is not None
            )
            if target is not None and not explicit and target.get("title") == cls.__name__:
                del target["title"]
        return result
