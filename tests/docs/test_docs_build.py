"""What the tutorial's section 0 says about installing without PyPI holds: ``python -m build``
makes a wheel and an sdist, and the wheel, installed in a fresh virtual environment, serves.

The build runs without isolation (``--no-isolation``: hatchling and ``build`` are dev
dependencies), so the test needs no network. The fresh environment gets mcpserve from the
wheel alone (``pip install --no-deps``) and borrows the dependencies from this one through a
``.pth`` line; this environment's editable mcpserve stays out of it, since a directory named
in a ``.pth`` line has its own ``.pth`` files ignored. Bounded: about ten seconds.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from test_docs import TUTORIAL

import mcpserve
from markdown_blocks import ROOT, blocks
from mcpserve import Client

pytestmark = pytest.mark.subprocess

TIMEOUT = 120
README = ROOT / "README.md"


def run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def ignored_by_git(paths: set[str]) -> list[str]:
    done = subprocess.run(["git", "check-ignore", "--stdin"], cwd=ROOT, capture_output=True,
                          text=True, input="\n".join(sorted(paths)), check=False)  # fmt: skip
    return done.stdout.split()


def build(out: Path) -> tuple[Path, Path]:
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT)
    [wheel], [sdist] = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    return wheel, sdist


def fresh_environment(directory: Path, wheel: Path) -> Path:
    """A new virtual environment with ``wheel`` installed; its Python."""
    venv.create(directory, with_pip=False)
    python = directory / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--quiet", wheel)
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    borrowed = sysconfig.get_paths()["purelib"]  # the dependencies, not mcpserve
    (Path(purelib.strip()) / "borrowed-dependencies.pth").write_text(borrowed + "\n")
    return python


async def test_the_wheel_installs_in_a_fresh_environment_and_serves_over_stdio(
    tmp_path: Path,
) -> None:
    wheel, sdist = build(tmp_path / "dist")
    assert wheel.name == f"mcpserve-{mcpserve.__version__}-py3-none-any.whl"
    # The file name the tutorial installs is the one the build makes.
    assert f"dist/{wheel.name}" in "".join(b.code for b in blocks(TUTORIAL))

    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())
    assert {"mcpserve/__init__.py", "mcpserve/py.typed", "mcpserve/dev/static/index.html"} <= files
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = {"pyproject.toml", "README.md", "src/mcpserve/__init__.py", "src/mcpserve/py.typed"}
    if (ROOT / "LICENSE").exists():
        expected.add("LICENSE")
    assert expected <= names
    # Every file of the repository, and nothing git ignores (what running the benchmarks or
    # the tests makes: venvs with links to absolute paths, which unpack nowhere).
    tracked = set(run("git", "ls-files", cwd=ROOT).split())
    assert tracked <= names
    assert ignored_by_git(names - tracked) == []

    python = fresh_environment(tmp_path / "venv", wheel)
    imported = run(python, "-c", "import mcpserve; print(mcpserve.__file__)")
    assert imported.startswith(str(tmp_path / "venv")), imported  # the wheel's, not the clone's
    assert (tmp_path / "venv" / "bin" / "mcpserve").exists()  # the command's entry point

    # The README's example, as a reader saves it, run by the wheel's mcpserve.
    [example] = [block for block in blocks(README) if block.language == "python"]
    (tmp_path / "app.py").write_text(example.code)
    async with Client.stdio([str(python), "app.py"], cwd=str(tmp_path), timeout=30) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["add"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result["structuredContent"] == 5
