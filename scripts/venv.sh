# Sourced by scripts/monitor and scripts/test: create or refresh ./.venv with qprof
# and its dependencies. Re-installs only when pyproject.toml changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${QPROF_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
EXTRAS="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.qprof-installed${EXTRAS:+-$EXTRAS}"
WANT="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "$ROOT${EXTRAS:+[$EXTRAS]}"
    echo "$WANT" > "$STAMP"
fi
