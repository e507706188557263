# Sourced by the scripts: make sure .venv exists and holds mcpserve with the given extras.
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
extras=$1
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv" >&2
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.mcpserve-installed-$extras"
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing mcpserve[$extras] into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
  echo "$want" > "$stamp"
fi
