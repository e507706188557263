"""The documents' blocks that are not Python: each kind is checked against what it shows.

* ``json``: parses; an MCP message validates against the 2026-07-28 schema
  (``wire_schema.py``: a response against the result of the request with its id shown
  before it), a task result against the tasks extension's (``task_schema.py``), an
  ``mcpServers`` configuration entry by entry as ``mcpserve proxy --config`` reads it. A
  block after a ``test-output`` directive is compared with the server's output by
  ``test_docs.py`` instead.
* ``haproxy``, ``nginx``: a block whose first line is a line of the file in ``deploy/`` is
  a run of that file's lines, exactly; any other block changes that file, so it must start
  with a directive the file has (the ``bind`` or ``listen`` it replaces).
* ``dockerfile``: an image of one's own built on the repository's ``Dockerfile``: ``FROM``
  the tag the document builds, ``USER`` one the base image has, copying the app to where the
  base image's ``CMD`` runs it.
* ``markdown`` that is a ``SKILL.md`` (frontmatter first): a skill mcpserve serves.
* ``toml``: parses. (There is no ``yaml`` block, and no YAML parser among the dependencies:
  the first one fails the kind test below until it gets its check.)
* ``console`` and ``bash``: ``pip install`` names extras that ``pyproject.toml`` has (and the
  wheel of this version), paths into the repository exist (scripts executable), and Python
  fed through a heredoc compiles. ``mcpserve`` commands are ``test_docs_cli.py``'s, and
  ``python -c``, ``pytest`` and ``uvicorn --factory`` commands run in ``test_docs.py``.

Any other language fails, so that a new kind of block comes with its check.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

import mcpserve
from markdown_blocks import DOCUMENTS, ROOT, Block, blocks, console_commands
from mcpserve import Server
from mcpserve.protocol.frontmatter import parse_frontmatter
from mcpserve.proxy import upstream_from_config
from task_schema import check_task_result
from wire_schema import check, check_notification, check_response

#: Block kinds that show no code or file: command output, trees, diagrams.
UNCHECKED = ("text", "")
DEPLOY = {"haproxy": ROOT / "deploy" / "haproxy.cfg", "nginx": ROOT / "deploy" / "nginx.conf"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
#: Words of a command that point into the repository.
REPOSITORY_PATH = re.compile(
    r"(?:^|[\s\"'=:<>$]|PWD/)((?:\./)?(?:deploy|examples|scripts|benchmarks|tests)/[\w./-]*\w)"
)


def every_block() -> list[Block]:
    return [block for document in DOCUMENTS for block in blocks(document)]


def kind(language: str) -> list[Any]:
    return [
        pytest.param(block, id=block.where) for block in every_block() if block.language == language
    ]


def test_every_block_is_of_a_kind_the_tests_check() -> None:
    checked = {"python", "py", "json", "console", "bash", "markdown", "toml", "dockerfile",
               "yaml", *DEPLOY, "test-setup", "test-output", *UNCHECKED}  # fmt: skip
    unknown = [block.where for block in every_block() if block.language not in checked]
    assert unknown == [], f"blocks of a kind nothing checks: {unknown}"


# ------------------------------------------------------------------------------ json


def json_blocks() -> list[tuple[Block, bool, dict[int | str, str]]]:
    """Each json block, whether a test-output directive precedes it, and the methods of the
    requests shown before it in its document, by id."""
    found = []
    for document in DOCUMENTS:
        methods: dict[int | str, str] = {}
        compared = False
        for block in blocks(document):
            if block.language == "test-output":
                compared = True
            elif block.language == "json":
                found.append((block, compared, dict(methods)))
                message = json.loads(block.code)
                if isinstance(message, dict) and "method" in message and "id" in message:
                    methods[message["id"]] = message["method"]
                compared = False
    return found


@pytest.mark.parametrize(
    ("block", "compared", "methods"),
    [pytest.param(*found, id=found[0].where) for found in json_blocks()],
)
def test_a_json_block_is_a_valid_message_result_or_configuration(
    block: Block, compared: bool, methods: dict[int | str, str]
) -> None:
    shown = json.loads(block.code)
    if compared:
        return  # equal to what the server answers: test_docs.py
    if "jsonrpc" in shown and "method" in shown:
        if "id" in shown:
            check("JSONRPCRequest", shown)
        else:
            check_notification(shown)
    elif "jsonrpc" in shown:
        assert shown["id"] in methods, f"{block.where}: a response to no request shown"
        check_response(methods[shown["id"]], shown)
    elif shown.get("resultType") == "task":
        check_task_result("tools/call", shown)
    elif "mcpServers" in shown:
        for name, entry in shown["mcpServers"].items():
            upstream_from_config(name, entry)
    else:
        pytest.fail(f"{block.where}: JSON of no kind the tests know: say what it shows")


# ------------------------------------------------------------------------------ deploy/


@pytest.mark.parametrize("block", [*kind("haproxy"), *kind("nginx")])
def test_a_load_balancer_block_is_an_excerpt_of_its_file_or_a_change_to_one(block: Block) -> None:
    lines = DEPLOY[block.language].read_text().split("\n")
    shown = block.code.rstrip("\n").split("\n")
    if shown[0] in lines:
        start = lines.index(shown[0])
        assert lines[start : start + len(shown)] == shown, f"{block.where} differs from the file"
    else:  # a change: it replaces one of the file's directives
        directives = {line.split()[0] for line in lines if line.strip()}
        assert shown[0].split()[0] in directives, f"{block.where} changes nothing the file has"


@pytest.mark.parametrize("block", kind("yaml"))
def test_a_kubernetes_probe_asks_a_path_the_http_app_answers(block: Block) -> None:
    """The probes a manifest shows are the HTTP app's own (its defaults), GET on its port."""
    import inspect

    from mcpserve.transports.http import HTTPApp

    defaults = inspect.signature(HTTPApp).parameters
    answered = {defaults["health_path"].default, defaults["ready_path"].default}
    probes = re.findall(r"httpGet: \{path: (\S+), port: (\d+)", block.code)
    assert probes, f"{block.where}: no httpGet probe"
    ports = set(re.findall(r"containerPort: (\d+)", block.code))
    for path, port in probes:
        assert path in answered, f"{block.where}: {path} is not a probe the app answers"
        assert port in ports, f"{block.where}: the probe's port {port} is not the container's"


@pytest.mark.parametrize("block", kind("dockerfile"))
def test_an_image_of_ones_own_builds_on_the_repositorys(block: Block) -> None:
    base = (ROOT / "Dockerfile").read_text()
    users = {"root", *re.findall(r"useradd .* (\w+)$", base, flags=re.M)}
    command = re.search(r"^CMD (.*)$", base, flags=re.M)
    assert command is not None
    tags = {
        command.words[command.words.index("-t") + 1]
        for other in blocks(block.document)
        if other.language == "console"
        for command in console_commands(other)
        if command.words[:2] == ["docker", "build"]
    }
    for line in block.code.split("\n"):
        instruction, _, argument = line.partition(" ")
        if instruction == "FROM":
            assert argument in tags, f"{block.where}: FROM {argument}, built nowhere"
        elif instruction == "USER":
            assert argument in users, f"{block.where}: the base image has no user {argument}"
        elif instruction == "COPY":
            assert argument.split()[-1] in command.group(1), (
                f"{block.where}: copied where nothing runs"
            )


# ------------------------------------------------------------------------------ others


@pytest.mark.parametrize("block", kind("markdown"))
def test_a_skill_md_shown_is_one_mcpserve_serves(block: Block, tmp_path: Path) -> None:
    name = parse_frontmatter(block.code)["name"]
    (tmp_path / name).mkdir()
    (tmp_path / name / "SKILL.md").write_text(block.code)
    [skill] = Server("check").add_skills(tmp_path)
    assert skill.uri == f"skill://{name}/SKILL.md"


def test_every_toml_block_parses() -> None:
    for block in every_block():
        if block.language == "toml":
            tomllib.loads(block.code)


def pip_requirements(words: list[str]) -> list[str]:
    return [word for word in words[2:] if not word.startswith("-")]


@pytest.mark.parametrize("block", [*kind("console"), *kind("bash")])
def test_a_command_names_what_the_repository_has(block: Block) -> None:
    for command in console_commands(block):
        words = command.words
        if words[:2] == ["pip", "install"]:
            for requirement in pip_requirements(words):
                extras = re.search(r"\[([\w,]+)\]$", requirement)
                if extras:
                    missing = set(extras.group(1).split(",")) - EXTRAS
                    assert not missing, f"{block.where}: no extra {missing} in pyproject.toml"
                if requirement.endswith(".whl") or ".whl[" in requirement:
                    wheel = Path(requirement.split("[")[0]).name
                    assert wheel == f"mcpserve-{mcpserve.__version__}-py3-none-any.whl", wheel
        for path in REPOSITORY_PATH.findall(" ".join(words)):
            assert (ROOT / path).exists(), f"{block.where}: {path} is not in the repository"
            if path.startswith(("./", "scripts/")):
                assert os.access(ROOT / path, os.X_OK), f"{block.where}: {path} is not executable"
        if command.heredoc is not None and "python" in " ".join(words):
            compile(command.heredoc, block.where, "exec")


# ------------------------------------------------------------------------------ links

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(document: Path) -> set[str]:
    """GitHub's anchors for the document's headings: lower case, punctuation dropped,
    spaces as hyphens, repeats numbered."""
    found: set[str] = set()
    fenced = False
    for line in document.read_text().split("\n"):
        fenced ^= line.startswith("```")
        if fenced or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        anchor, count = slug, 0
        while anchor in found:
            count += 1
            anchor = f"{slug}-{count}"
        found.add(anchor)
    return found


def prose(document: Path) -> str:
    """The document without its fenced blocks, whose brackets are code."""
    kept, fenced = [], False
    for line in document.read_text().split("\n"):
        fenced ^= line.startswith("```")
        if not fenced and not line.startswith("```"):
            kept.append(line)
    return "\n".join(kept)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda document: document.name)
def test_every_link_into_the_repository_resolves(document: Path) -> None:
    broken = []
    for target in LINK.findall(prose(document)):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists() or (
            anchor and linked.suffix == ".md" and anchor not in anchors(linked)
        ):
            broken.append(target)
    assert broken == [], f"{document.name}: links to nothing: {broken}"
