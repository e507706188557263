"""Dependencies: ``Annotated[T, Depends(fn)]`` parameters, provided per request."""

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import pytest

from mcpserve import Context, Depends, MCPError, Server, ToolError, blocking


class Database:
    """A stand-in connection that records what happens to it."""

    opened = 0

    def __init__(self, events: list[str]) -> None:
        Database.opened += 1
        self.number = Database.opened
        self.events = events

    def query(self, text: str) -> str:
        self.events.append(f"query {text}")
        return f"rows for {text}"


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


# -- the published schema ---------------------------------------------------------------------


async def test_a_dependency_is_left_out_of_the_tools_input_schema(connect: Any) -> None:
    server = Server("t")

    def get_db() -> Database:
        return Database([])

    @server.tool
    def find(query: str, db: Annotated[Database, Depends(get_db)]) -> str:
        return db.query(query)

    async with connect(server) as client:
        (tool,) = await client.list_tools()
    assert tool["inputSchema"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }


async def test_a_dependency_is_left_out_of_a_prompts_arguments(connect: Any) -> None:
    server = Server("t")

    def house_style() -> str:
        return "terse"

    @server.prompt
    def review(code: str, style: Annotated[str, Depends(house_style)]) -> str:
        return f"Review this {style}ly: {code}"

    async with connect(server) as client:
        (prompt,) = await client.list_prompts()
        got = await client.get_prompt("review", {"code": "x = 1"})
    assert prompt["arguments"] == [{"name": "code", "required": True}]
    assert got["messages"][0]["content"]["text"] == "Review this tersely: x = 1"


# -- the shapes of a dependency ---------------------------------------------------------------


async def test_an_async_a_plain_and_a_blocking_dependency_are_each_called_in_their_place(
    connect: Any,
) -> None:
    server = Server("t")
    threads: dict[str, str] = {}

    async def region() -> str:
        threads["async"] = threading.current_thread().name
        await asyncio.sleep(0)
        return "eu"

    def tenant() -> str:
        threads["plain"] = threading.current_thread().name
        return "acme"

    @blocking
    def quota() -> int:
        threads["blocking"] = threading.current_thread().name
        return 5

    @server.tool
    async def whoami(
        r: Annotated[str, Depends(region)],
        t: Annotated[str, Depends(tenant)],
        q: Annotated[int, Depends(quota)],
    ) -> str:
        return f"{t}@{r} quota {q}"

    async with connect(server) as client:
        result = await client.call_tool("whoami", {})
    assert text_of(result) == "acme@eu quota 5"
    loop_thread = threading.current_thread().name
    assert threads["async"] == loop_thread
    assert threads["plain"] == loop_thread
    assert threads["blocking"].startswith("mcpserve")


async def test_generator_dependencies_are_torn_down_last_entered_first(connect: Any) -> None:
    server = Server("t")
    events: list[str] = []

    def connection() -> Iterator[Database]:
        events.append("open")
        try:
            yield Database(events)
        finally:
            events.append("close")

    async def transaction(
        db: Annotated[Database, Depends(connection)],
    ) -> AsyncIterator[Database]:
        events.append("begin")
        yield db
        events.append("commit")

    @blocking
    def audit() -> Iterator[str]:
        events.append("audit start")
        yield threading.current_thread().name
        events.append(f"audit end in {threading.current_thread().name[:8]}")

    @server.tool
    def find(
        query: str,
        db: Annotated[Database, Depends(transaction)],
        audited_in: Annotated[str, Depends(audit)],
    ) -> str:
        events.append(f"audit ran in {audited_in[:8]}")
        return db.query(query)

    async with connect(server) as client:
        result = await client.call_tool("find", {"query": "x"})
    assert text_of(result) == "rows for x"
    assert events == [
        "open",
        "begin",
        "audit start",
        "audit ran in mcpserve",
        "query x",
        "audit end in mcpserve",
        "commit",
        "close",
    ]


async def test_a_teardown_sees_the_exception_the_call_raised_at_its_yield(connect: Any) -> None:
    server = Server("t")
    events: list[str] = []

    def transaction() -> Iterator[list[str]]:
        try:
            yield events
        except ValueError as exc:
            events.append(f"rollback after {exc}")
            raise
        else:
            events.append("commit")

    @server.tool
    def write(fail: bool, log: Annotated[list[str], Depends(transaction)]) -> str:
        if fail:
            raise ValueError("a bad row")
        return "written"

    async with connect(server) as client:
        ok = await client.call_tool("write", {"fail": False})
        failed = await client.call_tool("write", {"fail": True})
    assert text_of(ok) == "written"
    assert failed["isError"] is True
    assert events == ["commit", "rollback after a bad row"]


# -- per request, cached within it ------------------------------------------------------------


async def test_a_dependency_used_twice_in_a_request_is_called_once_and_again_next_request(
    connect: Any,
) -> None:
    server = Server("t")
    events: list[str] = []

    def get_db() -> Database:
        return Database(events)

    def repository(db: Annotated[Database, Depends(get_db)]) -> tuple[str, Database]:
        return "repo", db

    @server.tool
    def same(
        db: Annotated[Database, Depends(get_db)],
        repo: Annotated[tuple[str, Database], Depends(repository)],
    ) -> str:
        return f"{db is repo[1]} {db.number}"

    async with connect(server) as client:
        first = text_of(await client.call_tool("same", {}))
        second = text_of(await client.call_tool("same", {}))
    assert first.split()[0] == "True"
    assert second.split()[0] == "True"
    assert int(second.split()[1]) == int(first.split()[1]) + 1


async def test_a_dependency_receives_the_requests_context(connect: Any) -> None:
    server = Server("t")

    def caller(ctx: Context) -> str:
        return f"{ctx.method} {ctx.request_id!r}"

    @server.tool
    def who(c: Annotated[str, Depends(caller)]) -> str:
        return c

    async with connect(server) as client:
        result = await client.call_tool("who", {})
    assert text_of(result).startswith("tools/call ")


# -- every kind of handler --------------------------------------------------------------------


async def test_resources_templates_completions_and_custom_methods_take_dependencies(
    connect: Any,
) -> None:
    server = Server("t")
    calls: list[str] = []

    def owner() -> str:
        calls.append("owner")
        return "octocat"

    @server.resource("config://owner")
    def config(name: Annotated[str, Depends(owner)]) -> str:
        return f"owner={name}"

    @server.resource("repo://{name}")
    def repo(name: str, who: Annotated[str, Depends(owner)]) -> str:
        return f"{who}/{name}"

    @server.completion(resource="repo://{name}", argument="name")
    def names(value: str, who: Annotated[str, Depends(owner)]) -> list[str]:
        return [f"{who}-{value}"]

    @server.method("acme/owner")
    def get_owner(greeting: str, who: Annotated[str, Depends(owner)]) -> dict[str, str]:
        return {"text": f"{greeting}, {who}"}

    async with connect(server) as client:
        (template,) = await client.list_resource_templates()
        read = await client.read_resource("config://owner")
        templated = await client.read_resource("repo://hello")
        completed = await client.complete(
            {"type": "ref/resource", "uri": "repo://{name}"}, "name", "he"
        )
        custom = await client.request("acme/owner", {"greeting": "hi"})
    assert template["uriTemplate"] == "repo://{name}"
    assert read["contents"][0]["text"] == "owner=octocat"
    assert templated["contents"][0]["text"] == "octocat/hello"
    assert completed == {"values": ["octocat-he"]}
    assert custom["text"] == "hi, octocat"
    assert calls == ["owner"] * 4


async def test_a_handler_with_dependencies_never_answers_inline_and_one_without_still_does() -> (
    None
):
    server = Server("t")

    def value() -> int:
        return 1

    @server.tool
    def plain() -> int:
        return 1

    @server.tool
    def injected(v: Annotated[int, Depends(value)]) -> int:
        return v

    assert plain.synchronous is True
    assert injected.synchronous is False


# -- overrides --------------------------------------------------------------------------------


async def test_dependency_overrides_replace_a_dependency_until_removed(connect: Any) -> None:
    server = Server("t")

    def get_db() -> str:
        return "production"

    def settings(db: Annotated[str, Depends(get_db)]) -> str:
        return f"settings from {db}"

    @server.tool
    def where(s: Annotated[str, Depends(settings)], db: Annotated[str, Depends(get_db)]) -> str:
        return f"{s}; {db}"

    async def fake_db(ctx: Context) -> AsyncIterator[str]:
        yield f"fake for {ctx.method}"

    async with connect(server) as client:
        before = text_of(await client.call_tool("where", {}))
        server.dependency_overrides[get_db] = fake_db
        during = text_of(await client.call_tool("where", {}))
        server.dependency_overrides.clear()
        after = text_of(await client.call_tool("where", {}))
    assert before == after == "settings from production; production"
    assert during == "settings from fake for tools/call; fake for tools/call"


def _production_db() -> str:
    return "production"


def _needs_a_url(url: str) -> str:
    return url


def _where_server() -> Server:
    server = Server("t")

    @server.tool
    def where(db: Annotated[str, Depends(_production_db)]) -> str:
        return db

    return server


async def test_a_replacement_that_could_never_be_called_fails_the_line_that_sets_it(
    connect: Any,
) -> None:
    server = _where_server()
    with pytest.raises(TypeError) as raised:
        server.dependency_overrides[_production_db] = _needs_a_url
    assert str(raised.value) == (
        "dependency_overrides[_production_db] = _needs_a_url: Dependency _needs_a_url() has "
        "the parameter 'url', which nothing provides: a dependency's parameters are a "
        "Context, Annotated[T, Depends(...)], or have defaults"
    )
    with pytest.raises(TypeError, match=r"must be a function that provides the value, not 3: "):
        server.dependency_overrides[_production_db] = 3  # type: ignore[assignment]
    assert len(server.dependency_overrides) == 0  # nothing half-set
    async with connect(server) as client:
        assert text_of(await client.call_tool("where", {})) == "production"


async def test_a_broken_replacement_put_in_another_mapping_is_answered_naming_the_dependency(
    connect: Any,
) -> None:
    server = _where_server()
    server.runtime.dependency_overrides = {_production_db: _needs_a_url}  # a dict reads nothing
    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("where", {})
    assert raised.value.code == -32603
    assert raised.value.message == (
        "The override of dependency _production_db cannot be called: Dependency _needs_a_url() "
        "has the parameter 'url', which nothing provides: a dependency's parameters are a "
        "Context, Annotated[T, Depends(...)], or have defaults"
    )


# -- errors -----------------------------------------------------------------------------------


async def test_a_failing_dependency_answers_an_error_naming_it_and_logs_the_traceback(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")
    ran: list[str] = []

    def get_db() -> Database:
        raise ConnectionError("db.internal:5432 refused the connection")

    @server.tool
    def find(query: str, db: Annotated[Database, Depends(get_db)]) -> str:
        ran.append(query)
        return "never"

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("find", {"query": "x"})
    error = raised.value
    assert error.code == -32603
    assert error.message.startswith(
        "Dependency test_a_failing_dependency_answers_an_error_naming_it_and_logs_the_traceback"
        ".<locals>.get_db failed (ref "
    )
    assert "5432" not in error.message
    assert ran == []
    (record,) = [r for r in caplog.records if r.getMessage().startswith("Dependency")]
    assert record.exc_info is not None
    assert error.message.split("(ref ")[1].rstrip(")") in record.getMessage()


async def test_an_mcp_error_or_tool_error_from_a_dependency_is_its_answer(connect: Any) -> None:
    server = Server("t")

    def admin(ctx: Context) -> str:
        raise MCPError("Only administrators may do this", code=-32001)

    def quota() -> int:
        raise ToolError("Quota exhausted: try again tomorrow")

    @server.tool
    def purge(who: Annotated[str, Depends(admin)]) -> str:
        return "purged"

    @server.tool
    def spend(left: Annotated[int, Depends(quota)]) -> str:
        return "spent"

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("purge", {})
        spent = await client.call_tool("spend", {})
    assert (raised.value.code, raised.value.message) == (-32001, "Only administrators may do this")
    assert spent["isError"] is True
    assert text_of(spent) == "Quota exhausted: try again tomorrow"


async def test_a_failing_teardown_is_logged_by_name_and_the_answer_stands(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    def leaky() -> Iterator[str]:
        yield "value"
        raise RuntimeError("could not close")

    @server.tool
    def use(v: Annotated[str, Depends(leaky)]) -> str:
        return v

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            result = await client.call_tool("use", {})
    assert text_of(result) == "value"
    (record,) = [r for r in caplog.records if r.getMessage().startswith("Teardown")]
    assert record.getMessage().endswith(".<locals>.leaky failed")


async def test_raise_exceptions_shows_a_dependencys_own_exception() -> None:
    from mcpserve import Client

    server = Server("t", raise_exceptions=True)

    def get_db() -> str:
        raise ConnectionError("refused")

    @server.tool
    def find(db: Annotated[str, Depends(get_db)]) -> str:
        return db

    async with Client(server) as client:
        with pytest.raises(ConnectionError, match="refused"):
            await client.call_tool("find", {})


# -- mistakes at registration -----------------------------------------------------------------


def test_depends_on_something_not_callable_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"^Depends\(\) takes the function .* not 'db'"):
        Depends("db")  # type: ignore[arg-type]


def test_a_dependency_cycle_is_refused_at_registration_naming_it() -> None:
    server = Server("t")

    def a(b: Any) -> str:
        return ""

    def b(a_value: Annotated[str, Depends(a)]) -> str:
        return a_value

    a.__annotations__["b"] = Annotated[str, Depends(b)]

    with pytest.raises(TypeError) as raised:

        @server.tool
        def loop(value: Annotated[str, Depends(a)]) -> str:
            return value

    message = str(raised.value)
    assert message.startswith("Dependency cycle: ")
    assert message.count("\n") == 0
    local = "test_a_dependency_cycle_is_refused_at_registration_naming_it.<locals>"
    assert message == (
        f"Dependency cycle: {local}.a -> {local}.b -> {local}.a; a dependency cannot need itself"
    )


def test_a_dependency_parameter_nothing_provides_is_refused_at_registration() -> None:
    server = Server("t")

    def get_db(dsn: str) -> str:
        return dsn

    with pytest.raises(TypeError, match=r"get_db\(\) has the parameter 'dsn', which nothing"):

        @server.tool
        def find(db: Annotated[str, Depends(get_db)]) -> str:
            return db


def test_depends_written_as_a_default_is_refused_with_the_annotated_form() -> None:
    server = Server("t")

    def get_db() -> str:
        return ""

    with pytest.raises(TypeError, match=r"write it in the annotation instead: db: Annotated"):

        @server.tool
        def find(db: str = Depends(get_db)) -> str:  # type: ignore[assignment]
            return db


# -- composition and tasks --------------------------------------------------------------------


async def test_a_mounted_servers_dependencies_follow_its_overrides_and_the_parents_first(
    connect: Any,
) -> None:
    billing = Server("billing")

    def ledger() -> str:
        return "real ledger"

    @billing.tool
    def balance(account: str, book: Annotated[str, Depends(ledger)]) -> str:
        return f"{account} in the {book}"

    parent = Server("parent")
    parent.mount(billing, namespace="billing")

    async with connect(parent) as client:
        tools = {tool["name"]: tool["inputSchema"] for tool in await client.list_tools()}
        mounted = text_of(await client.call_tool("billing_balance", {"account": "acme"}))
        # Renamed in place, one argument fixed; the parent's overrides apply to the call.
        parent.transform_tool("billing_balance", name="my_balance", fixed={"account": "me"})
        billing.dependency_overrides[ledger] = lambda: "billing's ledger"
        childs = text_of(await client.call_tool("my_balance", {}))
        parent.dependency_overrides[ledger] = lambda: "parent's ledger"
        parents = text_of(await client.call_tool("my_balance", {}))
    assert list(tools["billing_balance"]["properties"]) == ["account"]
    assert mounted == "acme in the real ledger"
    assert childs == "me in the billing's ledger"
    assert parents == "me in the parent's ledger"


async def test_a_task_tools_dependency_is_torn_down_when_its_work_ends_not_with_the_answer() -> (
    None
):
    from mcpserve import Client
    from mcpserve.testing import serve_http

    server = Server("t")
    events: list[str] = []
    release = threading.Event()

    async def worker() -> AsyncIterator[str]:
        events.append("open")
        yield "worker"
        events.append("close")

    @server.tool(task="required")
    async def crunch(who: Annotated[str, Depends(worker)]) -> str:
        await asyncio.to_thread(release.wait, 10)
        return f"crunched by {who}"

    with serve_http(server) as url:
        async with Client.http(url) as client:
            handle = await client.call_tool("crunch", {}, task=True)
            assert events == ["open"]  # the task's creation was answered; the work goes on
            release.set()
            result = await asyncio.wait_for(handle.result(), 10)
    assert text_of(result) == "crunched by worker"
    assert events == ["open", "close"]
