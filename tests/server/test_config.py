"""Server(...)'s keywords (server/config.py) and each entry's options record
(server/entries/options.py): a misspelt keyword is a TypeError naming it, as for any call."""

from __future__ import annotations

from typing import Any

import pytest

from mcpserve import Prompt, Server, Tool


def echo(text: str) -> str:
    return text


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (
            lambda: Server("s", redis_ur="redis://x"),
            "Server() got an unexpected keyword argument 'redis_ur'",
        ),
        (
            lambda: Tool(echo, pool=None, titel="Echo"),
            "Tool() got an unexpected keyword argument 'titel'",
        ),
        (
            lambda: Prompt(echo, pool=None, task="optional"),
            "Prompt() got an unexpected keyword argument 'task'",
        ),
        (
            lambda: Server("s").add_resource("note://a", echo, mimetype="text/plain"),
            "resource() got an unexpected keyword argument 'mimetype'",
        ),
    ],
)
def test_a_misspelt_keyword_is_a_type_error_naming_it(make: Any, named: str) -> None:
    with pytest.raises(TypeError) as refused:
        make()
    assert str(refused.value) == named


def test_the_options_not_given_take_their_documented_defaults() -> None:
    server = Server("s")
    assert server.handshake is not None  # legacy=True
    assert server.raise_exceptions is False
    assert server.runtime.client_timeout_seconds == 120.0
    assert server.settings.client_logging is False
    assert Tool(echo, pool=server.thread_pool).request_state == "sealed"
