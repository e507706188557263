"""Everything the suite needs, installed by the suite: one venv per framework, and wrk.

Each framework gets its own venv under ``benchmarks/.venvs`` (gitignored) with the same
uvicorn, httptools, uvloop and orjson, so that only the framework differs:

* ``mcpserve``: this checkout, installed editable (the raw baseline runs here too);
* ``official``: the latest ``mcp`` 2.x from PyPI;
* ``fastmcp``: the latest ``fastmcp`` 4.x from PyPI.

A venv is rebuilt when its requirement list changes, or on ``--refresh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENVS = HERE / ".venvs"
COMMON = ["uvicorn>=0.30", "httptools>=0.6", "uvloop>=0.19", "orjson>=3.10"]
REQUIREMENTS: dict[str, list[str]] = {
    "mcpserve": ["-e", str(REPO), *COMMON],
    "official": ["mcp>=2,<3", *COMMON],
    "fastmcp": ["fastmcp>=4,<5", *COMMON],
}
#: Which venv runs each framework's servers and clients.
VENV_OF = {"mcpserve": "mcpserve", "official": "official", "fastmcp": "fastmcp", "raw": "mcpserve"}
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


def _log(message: str) -> None:
    print(f"[setup] {message}", file=sys.stderr, flush=True)


def ensure_venvs(refresh: bool = False) -> None:
    VENVS.mkdir(parents=True, exist_ok=True)
    for name, requirements in REQUIREMENTS.items():
        venv = VENVS / name
        stamp = venv / ".bench-requirements"
        want = hashlib.sha256(json.dumps(requirements).encode()).hexdigest()
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
