"""The type aliases shared across the package, each defined here once.

Four families. The ASGI ones describe the interface an HTTP server calls the application
through: a connection's ``Scope``, the ``Message`` events it ``Receive``\\ s and ``Send``\\ s,
and the ``ASGIApp`` that takes the three. The JSON ones describe what the wire carries once
decoded: a ``JSONDict`` is a JSON object whose values have not been checked yet (the code
that reads a field checks it), and a ``Result`` is the result object of a JSON-RPC answer.
A ``UserFunction`` is a function the user decorated, whose signature only its inspection at
registration knows. And an ``Event`` is one change on a server's event stream, which an
``EventListener`` hears: the subscription bus delivers events, the server's subscriptions
and its endpoint hand them on, and the transports listen (they may not import ``server/``,
so the names live here).

``Any`` stays in these aliases on purpose: ASGI leaves the values of a scope and a message to
each event's own specification, a decoded JSON value is whatever the peer sent until it is
checked, and a user's function takes and returns what its author wrote. Nothing here
imports the package, so every layer may import this module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

#: One ASGI connection's description (``type``, ``path``, ``headers``, ...).
Scope = MutableMapping[str, Any]
#: One ASGI event, received (``http.request``) or sent (``http.response.start``).
Message = MutableMapping[str, Any]
#: Awaits the next event from the HTTP server.
Receive = Callable[[], Awaitable[Message]]
#: Hands one event to the HTTP server.
Send = Callable[[Message], Awaitable[None]]
#: An ASGI application: called once per connection.
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: A decoded JSON object whose values are not checked yet.
JSONDict = dict[str, Any]
#: A decoded JSON value whose shape is not checked yet: an object, array, string, number,
#: boolean or null that a peer sent (or a value read out of a :data:`JSONDict`), until the
#: code that reads it checks it. A value the package makes itself is not one: it is typed
#: ``object``, or precisely.
JSONValue = Any
#: The ``result`` object of a JSON-RPC answer (``tools/call``'s ``{"content": ...}``, ...).
Result = JSONDict

#: A function the user decorated (a tool, a prompt, a resource): its signature is the
#: user's, and only its inspection at registration knows it.
UserFunction = Callable[..., Any]
#: A decorator's argument, handed back unchanged.
UserFunctionT = TypeVar("UserFunctionT", bound=UserFunction)

#: One change on a server's event stream, a small JSON object: ``{"type": "tools"}`` (a list
#: changed), ``{"type": "updated", "uri": ...}`` (a resource changed), ...
Event = JSONDict
#: Hears each event, called on the event loop.
EventListener = Callable[[Event], None]
#: Whether one subscriber hears of an update of a resource URI (the server's visibility
#: rule asked with that subscriber): a bool, or an awaitable of one.
UpdateGate = Callable[[str], bool | Awaitable[bool]]
