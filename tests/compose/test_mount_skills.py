"""A mounted server's skills: served by the parent's skills extension below the namespace
(``skill://billing/refunds/SKILL.md``), listed, got, read and browsed as the parent's own,
and following the child's changes. Digests are computed here from the bytes written."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Client, MCPError, Server, Skill

REFUNDS = b"---\nname: refunds\ndescription: Process refunds\n---\nCheck the order first.\n"
EMAIL = b"Dear customer,\n"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def billing(tmp_path: Path) -> Server:
    root = tmp_path / "skills" / "refunds"
    (root / "examples").mkdir(parents=True)
    (root / "SKILL.md").write_bytes(REFUNDS)
    (root / "examples" / "email.md").write_bytes(EMAIL)
    child = Server("billing")
    child.add_skills(tmp_path / "skills")

    @child.tool
    def pay(amount: int) -> str:
        return f"paid {amount}"

    return child


async def skills_of(client: Client) -> list[dict[str, Any]]:
    result = await client.request("skills/list", {})
    return result["skills"]  # type: ignore[no-any-return]


async def test_a_mounted_servers_skills_are_the_parents_below_the_namespace(
    tmp_path: Path,
) -> None:
    parent = Server("app")
    parent.mount(billing(tmp_path), namespace="billing")
    async with Client(parent) as client:
        discovered = await client.discover()
        assert "io.modelcontextprotocol/skills" in discovered["capabilities"]["extensions"]
        [entry] = await skills_of(client)
        assert entry["uri"] == "skill://billing/refunds/SKILL.md"
        assert entry["frontmatter"] == {"name": "refunds", "description": "Process refunds"}
        assert entry["resources"] == [
            {"uri": "skill://billing/refunds/SKILL.md", "digest": digest(REFUNDS),
             "size": len(REFUNDS)},
            {"uri": "skill://billing/refunds/examples/email.md", "digest": digest(EMAIL),
             "size": len(EMAIL)},
        ]  # fmt: skip
        got = await client.request("skills/get", {"uri": "skill://billing/refunds/SKILL.md"})
        assert got["skill"] == entry
        read = await client.read_resource("skill://billing/refunds/examples/email.md")
        assert read["contents"][0]["text"] == EMAIL.decode()
        listed = {r["uri"] for r in await client.list_resources()}
        assert listed == {"skill://billing/refunds/SKILL.md",
                          "skill://billing/refunds/examples/email.md"}  # fmt: skip
        folder = await client.request("resources/directory/read", {"uri": "skill://billing"})
        assert [r["uri"] for r in folder["resources"]] == ["skill://billing/refunds"]
        with pytest.raises(MCPError) as raised:  # the child's own URI is not the parent's
            await client.read_resource("skill://refunds/SKILL.md")
        assert raised.value.code == -32602


async def test_without_a_namespace_the_skills_keep_their_uris(tmp_path: Path) -> None:
    parent = Server("app")
    parent.mount(billing(tmp_path))
    async with Client(parent) as client:
        [entry] = await skills_of(client)
        assert entry["uri"] == "skill://refunds/SKILL.md"
        read = await client.read_resource("skill://refunds/SKILL.md")
        assert read["contents"][0]["text"] == REFUNDS.decode()


async def test_skills_the_child_adds_and_removes_later_follow(tmp_path: Path) -> None:
    child = billing(tmp_path)
    parent = Server("app")
    parent.mount(child, namespace="billing")
    async with Client(parent) as client:
        child.add_skill(Skill("invoices", "Write invoices", "# Invoices"))
        uris = [entry["uri"] for entry in await skills_of(client)]
        assert uris == ["skill://billing/refunds/SKILL.md", "skill://billing/invoices/SKILL.md"]
        child.add_skill(Skill("invoices", "Write better invoices", "# v2"), replace=True)
        [_, invoices] = await skills_of(client)
        assert invoices["frontmatter"]["description"] == "Write better invoices"
        read = await client.read_resource("skill://billing/invoices/SKILL.md")
        assert read["contents"][0]["text"].endswith("# v2")
        child.remove_skill("skill://refunds/SKILL.md")
        uris = [entry["uri"] for entry in await skills_of(client)]
        assert uris == ["skill://billing/invoices/SKILL.md"]
        with pytest.raises(MCPError):
            await client.read_resource("skill://billing/refunds/SKILL.md")


async def test_a_link_to_a_childs_skill_names_the_parents_uri(tmp_path: Path) -> None:
    child = billing(tmp_path)

    @child.tool
    def guide() -> dict[str, Any]:
        return {"content": [{"type": "resource_link", "uri": "skill://refunds/SKILL.md",
                             "name": "refunds"}]}  # fmt: skip

    parent = Server("app")
    parent.mount(child, namespace="billing")
    async with Client(parent) as client:
        result = await client.call_tool("billing_guide", {})
        assert result["content"][0]["uri"] == "skill://billing/refunds/SKILL.md"


def test_a_skill_the_parent_already_serves_refuses_the_mount(tmp_path: Path) -> None:
    parent = Server("app")
    parent.add_skill(Skill("refunds", "Ours", "", prefix="billing"))
    with pytest.raises(ValueError, match=r"skill://billing/refunds/SKILL\.md"):
        parent.mount(billing(tmp_path), namespace="billing")


@pytest.mark.parametrize("namespace", ["billing", None])
async def test_the_childs_visibility_rule_decides_its_skills_in_the_parent(
    tmp_path: Path, namespace: str | None
) -> None:
    child = billing(tmp_path)

    @child.visibility
    def staff_only(ctx: Any, component: Any) -> bool:
        # The child's own URI, whatever the parent calls it.
        return not component.uri.startswith("skill://refunds/") or ctx.principal == "staff"

    parent = Server("app")
    parent.mount(child, namespace=namespace)
    base = "skill://billing" if namespace else "skill:/"
    skill_md = f"{base}/refunds/SKILL.md"
    email = f"{base}/refunds/examples/email.md"

    async def ask(principal: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from mcpserve.protocol.core import Auth
        from wire_helpers import request

        return await parent.handle(request(1, method, params), auth=Auth(principal))

    async with parent.running():
        guest_list = await ask("guest", "skills/list", {})
        assert guest_list["result"]["skills"] == []
        for method, params in (
            ("skills/get", {"uri": skill_md}),
            ("resources/read", {"uri": email}),
        ):
            hidden = await ask("guest", method, params)
            assert hidden["error"]["code"] == -32602, hidden
        staff_list = await ask("staff", "skills/list", {})
        assert [entry["uri"] for entry in staff_list["result"]["skills"]] == [skill_md]
        read = await ask("staff", "resources/read", {"uri": email})
        assert read["result"]["contents"][0]["text"] == EMAIL.decode()
        listed = await ask("guest", "resources/list", {})
        assert [r["uri"] for r in listed["result"]["resources"]] == []
