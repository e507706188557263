"""A server whose tools ask the user to fill in forms of every kind the spec allows.

Each tool ``ask_<form>`` asks with one model of :data:`FORMS` and returns what it got
(``{"action": ..., "data": ...}``, the model dumped as JSON), so a test can check both the
``requestedSchema`` a client receives and what the answer becomes. Run as a script it
serves stdio (or HTTP on ``MCPSERVE_TEST_HTTP_PORT``).
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal, Optional

from pydantic import AnyUrl, BaseModel, Field

from mcpserve import Context, Server

server = Server("elicitation-forms")


class Loan(BaseModel):
    reader: str
    weeks: int
    renewable: bool
    branch: Literal["north", "south"]
    note: str | None = Field(default=None, description="Anything else")


class Contact(BaseModel):
    name: str = Field(title="Full name", min_length=1, max_length=60)
    email: str = Field(json_schema_extra={"format": "email"})
    homepage: AnyUrl | None = None
    born: datetime.date
    call_at: datetime.datetime | None = None
    age: int = Field(gt=17, le=130)
    height: float | None = Field(default=None, ge=0.5, le=2.8, description="Metres")
    nickname: str | None  # no default: optional all the same, None when left out


class Shelf(enum.Enum):
    """Where the book goes."""

    TOP = "top"
    MIDDLE = "middle"
    BOTTOM = "bottom"


class Sorting(BaseModel):
    shelf: Shelf = Shelf.MIDDLE
    spare: Shelf | None = None
    genres: set[Literal["poetry", "prose", "drama"]] = Field(default=set(), max_length=2)
    formats: Annotated[list[Shelf], Field(min_length=1)]
    kind: Literal["book"] = "book"
    count: Optional[int] = Field(default=None, ge=0)  # noqa: UP045 - spelled the old way too


FORMS: dict[str, type[BaseModel]] = {"loan": Loan, "contact": Contact, "sorting": Sorting}


def _asking(name: str, model: type[BaseModel]) -> Any:
    async def ask(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit(f"Fill in the {name} form", model)
        data = answer.data.model_dump(mode="json") if answer.accepted else None
        return {"action": answer.action, "data": data}

    ask.__name__ = f"ask_{name}"
    return ask


for _name, _model in FORMS.items():
    server.tool(_asking(_name, _model))


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
