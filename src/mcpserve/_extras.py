"""Optional dependencies: what each extra brings, and the one line a missing one earns.

mcpserve's core needs pydantic, orjson and cryptography; everything else comes with an
extra (``pip install "mcpserve[http]"``) and is imported where it is first used. When it
is not installed, the user should read what to install, not a ``ModuleNotFoundError`` from
deep inside mcpserve. :func:`needs_extra` wraps each such first use: a missing module of a
known extra becomes :class:`MissingExtra`, whose message is the whole story::

    Server(redis_url=...) needs redis, which the redis extra installs: pip install "mcpserve[redis]"

It is raised ``from None``, and when nothing catches it the process prints that line alone
(:class:`_OneLine` wraps ``sys.excepthook`` once a :class:`MissingExtra` exists; every
other exception is shown as before). The entry points that own the process (the
``mcpserve`` command, ``server.run()``) print the line themselves. A module missing for
another reason (a typo in the user's code, a broken install of something else) passes
through untouched.

Where the need is known before the first use (``Server(redis_url=...)`` will need redis
when it starts), :func:`require` checks at once, without importing anything.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

#: The importable top-level module of each optional dependency, and (the distribution to
#: name, the extra that installs it).
OPTIONAL: dict[str, tuple[str, str]] = {
    "click": ("click", "cli"),
    "watchfiles": ("watchfiles", "cli"),
    "uvicorn": ("uvicorn", "http"),
    "httpx2": ("httpx2", "http"),
    "jwt": ("PyJWT", "auth"),
    "redis": ("redis", "redis"),
    "opentelemetry": ("opentelemetry-api", "otel"),
    "docket": ("pydocket", "workers"),
}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message, name=name)
        if not isinstance(sys.excepthook, _OneLine):
            sys.excepthook = _OneLine(sys.excepthook)


class _OneLine:
    """``sys.excepthook`` for a process ended by a :class:`MissingExtra`: its message, alone;
    any other exception goes to the hook that was there before."""

    def __init__(self, previous: object) -> None:
        self.previous = previous

    def __call__(
        self, kind: type[BaseException], value: BaseException, trace: TracebackType | None
    ) -> None:
        if isinstance(value, MissingExtra):
            print(value, file=sys.stderr)
        elif callable(self.previous):
            self.previous(kind, value, trace)


def missing_extra(purpose: str, module: str, extra: str | None = None) -> MissingExtra:
    """The error for ``purpose`` (what the user did) missing ``module``."""
    distribution, default_extra = OPTIONAL[module.partition(".")[0]]
    chosen = extra or default_extra
    return MissingExtra(
        f"{purpose} needs {distribution}, which the {chosen} extra installs: "
        f'pip install "mcpserve[{chosen}]"',
        name=module,
    )


def require(module: str, purpose: str, extra: str | None = None) -> None:
    """Raise :class:`MissingExtra` now if ``module`` is not installed (nothing is imported)."""
    with needs_extra(purpose, extra):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


@contextmanager
def needs_extra(purpose: str, extra: str | None = None) -> Iterator[None]:
    """Turn an optional dependency found missing inside the block into :class:`MissingExtra`.

    ``extra`` names the extra to install when it is not the dependency's usual one (PyJWT
    and httpx2 for token verification both come with ``auth``).
    """
    try:
        yield
    except MissingExtra:
        raise
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in OPTIONAL:
            raise
        raise missing_extra(purpose, exc.name or "", extra) from None
