"""The client program the official MCP conformance suite drives, built with mcpserve's Client.

The suite (``conformance client --command ...``) starts a mock server per scenario and
runs this program with the server's URL as the last argument, the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` and, for some scenarios, what to do in
``MCP_CONFORMANCE_CONTEXT`` (JSON). It then scores what it saw on the wire, so the program
only has to behave like an ordinary client: connect (the era is negotiated:
``server/discover`` first, ``initialize`` against an older server), list what the server
offers and use it. ``MCP_CONFORMANCE_PROTOCOL_VERSION`` names the revision the run is
scored against; the program does not need it, since negotiation finds the same answer.

Each scenario has a small function below; those the suite scores on generic behaviour
(headers, ``_meta``, retries) share :func:`exercise`, which calls every tool, reads every
resource and gets every prompt. Questions from the server (an ``input_required`` round, or
a handshake-era request) are answered like a person who accepts every default.

The ``auth/*`` scenarios put an OAuth authorization server in front of the mock: the client
is given ``auth=`` (:func:`oauth_for`), with the pre-registered credentials the scenario's
context names, a Client ID Metadata Document URL (used only where the server accepts one)
and, for the browser's part, :func:`follow_redirect`: the mock authorization server consents
at once and redirects, so fetching the authorization URL yields the callback URL. The
extensions' scenarios get their grant: client credentials, a workload's JWT, the user's ID
token from an enterprise IdP (enterprise-managed authorization), and DPoP turned on for
``auth/dpop*``.

``scripts/conformance`` runs the suite with this program after the server legs; one
scenario: ``scripts/conformance client --scenario sse-retry``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2

from mcpserve import Client, ClientCredentials, JWTBearer, OAuth, SkillVerificationError
from mcpserve.client.oauth import EnterpriseAuthorization, OAuthFlow

JSON = dict[str, Any]
#: Placeholder values for properties that must be filled and have no default.
_PLACEHOLDERS: dict[str, Any] = {
    "string": "conformance",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "object": {},
    "array": [],
}


def filled(schema: Any, *, only_required: bool) -> JSON:
    """Values for an object schema's properties: each default, else a placeholder."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    values: JSON = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        if "default" in prop:
            values[name] = prop["default"]
        elif not only_required or name in required:
            if isinstance(prop.get("enum"), list) and prop["enum"]:
                values[name] = prop["enum"][0]
            else:
                values[name] = _PLACEHOLDERS.get(prop.get("type"), "conformance")
    return values


def accept(params: JSON) -> JSON:
    """Elicitation: accept, with every default the form offers (SEP-1034) filled in."""
    return {
        "action": "accept",
        "content": filled(params.get("requestedSchema"), only_required=False),
    }


def sample(params: JSON) -> JSON:
    return {"role": "assistant", "content": {"type": "text", "text": "Hello from the client"},
            "model": "conformance-model", "stopReason": "endTurn"}  # fmt: skip


def roots(params: JSON) -> JSON:
    return {"roots": [{"uri": "file:///tmp/conformance", "name": "conformance"}]}


#: Where this client's Client ID Metadata Document would be (the mock only compares it).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
#: Nobody listens here: :func:`follow_redirect` stops at the redirect to it.
REDIRECT_URI = "http://localhost:3000/callback"


async def follow_redirect(url: str) -> str:
    """What a browser reaches from the authorization URL when the user consents at once."""
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as browser:
        response = await browser.get(url)
    location = response.headers.get("location")
    if not response.is_redirect or not location:
        raise RuntimeError(f"the authorization request answered {response.status_code}")
    return str(response.url.join(location))


def oauth_for(scenario: str, context: JSON) -> OAuthFlow:
    if scenario == "auth/wif-jwt-bearer":
        return JWTBearer(context["valid_jwt"], client_id=context.get("client_id"))
    if scenario == "auth/enterprise-managed-authorization":  # the user's SSO ID token
        return EnterpriseAuthorization(
            context["idp_id_token"],
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
    if scenario.startswith("auth/client-credentials"):
        if "private_key_pem" in context:  # private_key_jwt
            key, algorithm = context["private_key_pem"], context.get("signing_algorithm")
            return ClientCredentials(context["client_id"], private_key=key,
                                     signing_algorithm=algorithm)  # fmt: skip
        return ClientCredentials(context["client_id"], context["client_secret"])
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        issuer=context.get("issuer"),
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="mcpserve conformance client",
        redirect_uri=REDIRECT_URI,
        on_authorize=follow_redirect,
        dpop=scenario.startswith("auth/dpop"),  # DPoP is opt-in; these scenarios test it
    )


def connect(url: str, auth: OAuthFlow | None = None) -> Client:
    return Client(url, on_elicit=accept, on_sample=sample, on_list_roots=roots, timeout=20,
                  auth=auth)  # fmt: skip


async def exercise(client: Client, context: JSON) -> None:
    """Call every tool (with the scenario's arguments when it gives any), read every
    resource, get every prompt."""
    tools = await client.list_tools()
    calls = context.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            show(await client.call_tool(call["name"], call.get("arguments") or {}))
    else:
        for tool in tools:
            arguments = filled(tool.get("inputSchema"), only_required=True)
            show(await client.call_tool(tool["name"], arguments))
    if "resources" in client.server_capabilities:
        for resource in await client.list_resources():
            show(await client.read_resource(resource["uri"]))
    if "prompts" in client.server_capabilities:
        for prompt in await client.list_prompts():
            arguments = {a["name"]: "conformance" for a in prompt.get("arguments") or ()
                         if a.get("required")}  # fmt: skip
            show(await client.get_prompt(prompt["name"], arguments))


async def list_only(client: Client, context: JSON) -> None:
    """List the tools and stop (the scenario watches what the client does not do)."""
    show({"tools": [tool["name"] for tool in await client.list_tools()]})


async def tools_call(client: Client, context: JSON) -> None:
    await client.list_tools()
    show(await client.call_tool("add_numbers", {"a": 5, "b": 3}))


async def echo_schema(client: Client, context: JSON) -> None:
    """Send the focal tool's inputSchema back through the echo tool, exactly as listed."""
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    show(await client.call_tool("json_schema_echo", {"schema": schema}))


async def request_state(client: Client, context: JSON) -> None:
    """The multi round-trip tools, in order (the unrelated one between the others)."""
    await client.list_tools()
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state",
                 "test_mrtr_no_result_type"):  # fmt: skip
        show(await client.call_tool(name))


async def skills_listed(client: Client, context: JSON) -> None:
    """List the skills and read none of their files (nothing asks for one yet)."""
    show(await client.list_skills())


async def skills_used(client: Client, context: JSON) -> None:
    """Load each skill (its SKILL.md, verified against its entry), then read its files; a
    skill that fails verification is left alone, and its files are never read."""
    for entry in await client.list_skills():
        try:
            skill = await client.load_skill(entry)
        except SkillVerificationError as exc:
            print(f"skill refused: {exc.message}", file=sys.stderr)
            continue
        for uri in skill.files:
            show({"read": uri, "bytes": len(await skill.read(uri))})


SCENARIOS: dict[str, Callable[[Client, JSON], Awaitable[None]]] = {
    "initialize": list_only,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": exercise,
    "sse-retry": exercise,
    "request-metadata": exercise,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": exercise,
    "http-custom-headers": exercise,
    "http-invalid-tool-headers": exercise,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": echo_schema,
    "sep-2640-client-no-prefetch": skills_listed,
    "sep-2640-client-verify-digest": skills_used,
    "sep-2640-client-verify-size": skills_used,
    "sep-2640-client-verify-frontmatter": skills_used,
}


def show(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False)[:500], flush=True)


async def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth = oauth_for(scenario, context) if scenario.startswith("auth/") else None
    run = SCENARIOS.get(scenario) or (exercise if auth is not None else None)
    if run is None:  # unknown: fail rather than pass silently
        print(f"conformance client: no behaviour for scenario {scenario!r}", file=sys.stderr)
        return 2
    async with connect(url, auth) as client:
        show({"era": "handshake" if client.legacy else "2026-07-28",
              "version": client.protocol_version})  # fmt: skip
        await run(client, context)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
