# Sourced by scripts/monitor and scripts/test: create or refresh ./.venv with qprof
# and its dependencies. Re-installs only when pyproject.toml changed. Says what it does
# (the first install takes ~30 s with a warm pip cache); pip's own output, warnings
# included, goes to $VENV/pip.log and is shown only when it fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${QPROF_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
EXTRAS="${1:-}"
venv_say() { echo "qprof: $*" >&2; }
if [ ! -x "$VENV/bin/python" ]; then
    venv_say "creating the Python environment $VENV (first run only)"
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.qprof-installed${EXTRAS:+-$EXTRAS}"
WANT="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    venv_say "installing qprof${EXTRAS:+[$EXTRAS]} and its dependencies into $VENV (pip; ~30 s from a warm cache)"
    started=$SECONDS
    # No pip self-upgrade and no byte-compiling of every installed file: the first
    # install took 52-62 s, 29-35 s so (Zen 5 guest, warm cache); Python compiles what is
    # imported when first imported (~6 s, once).
    if ! "$VENV/bin/python" -m pip install -q --no-compile -e "$ROOT${EXTRAS:+[$EXTRAS]}" \
            >"$VENV/pip.log" 2>&1; then
        tail -n 30 "$VENV/pip.log" >&2
        venv_say "pip failed (the whole log: $VENV/pip.log)"
        exit 1
    fi
    echo "$WANT" > "$STAMP"
    venv_say "installed in $((SECONDS - started)) s"
fi
