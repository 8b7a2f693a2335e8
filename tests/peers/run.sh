#!/usr/bin/env bash
# zenmode against real MCP peers: the MCP Python SDK, the TypeScript SDKs,
# the MCP Inspector CLI and Claude Code.
#
#   tests/peers/run.sh [python] [ts] [inspector] [claude]   (default: all four)
#
# Installs what it needs with install.sh beside it (a venv at
# tests/peers/.venv and tests/peers/node_modules, cached per pin file).
# Tests $ZENMODE_BIN (default: <repo>/target/release/zenmode, built with
# `cargo build --release` if missing). Needs python3 >= 3.10, node >= 20,
# npm; no stdin, no API key, no network beyond the package registries.
#
# Each peer runs with its own stdio trace (PEERS_TRACE=0 turns it off): the
# server is reached through a wrapper that copies its stdin/stdout to a temp
# dir, and the protocol each peer negotiated is summarized at the end.
#
# Prints each peer's `<peer>: N passed, M failed` line and a closing
# `peers: N passed, M failed`; exits non-zero if any peer failed.

set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export CI="${CI:-true}"
PEER_TIMEOUT="${PEER_TIMEOUT:-300}"

say() { printf 'peers: %s\n' "$*"; }
die() { printf 'peers: %s\n' "$*" >&2; printf 'peers: 0 passed, 1 failed\n'; exit 1; }

# --- which peers -------------------------------------------------------------
ALL=(python ts inspector claude)
if [ $# -eq 0 ]; then PEERS=("${ALL[@]}"); else PEERS=("$@"); fi
for p in "${PEERS[@]}"; do
  case "$p" in python|ts|inspector|claude) ;; *) die "unknown peer '$p' (known: ${ALL[*]})" ;; esac
done
wants() { local p; for p in "${PEERS[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
needs_node() { wants ts || wants inspector || wants claude; }

# --- the binary under test ---------------------------------------------------
if [ -n "${ZENMODE_BIN:-}" ]; then
  BIN="$ZENMODE_BIN"
  [ -x "$BIN" ] || die "ZENMODE_BIN=$BIN is not an executable file"
else
  BIN="$REPO/target/release/zenmode"
  if [ ! -x "$BIN" ]; then
    say "building $BIN (cargo build --release)"
    (cd "$REPO" && cargo build --release </dev/null) || die "cargo build --release failed"
  fi
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
say "zenmode under test: $BIN ($(timeout 10 "$BIN" --version </dev/null 2>/dev/null || echo "no --version"))"

# --- what the peers need: tests/peers/install.sh ------------------------------
# (a venv with the pinned MCP Python SDK, which every peer's runner uses, and
# the pinned npm packages; installed once per pin file, then reused)
PY="$HERE/.venv/bin/python"
if needs_node; then
  bash "$HERE/install.sh" </dev/null || die "installing the peers failed (tests/peers/install.sh)"
else
  bash "$HERE/install.sh" --python-only </dev/null || die "installing the MCP Python SDK failed (tests/peers/install.sh)"
fi

# --- preflight: a server that cannot answer initialize fails fast ------------
# (otherwise every peer check waits out its own connect timeout: ~15 minutes)
"$PY" - "$BIN" <<'EOF' || die "zenmode did not answer a plain initialize on stdio; not running the peers"
import json, subprocess, sys, threading
proc = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "zenmode-peers-preflight", "version": "0"}}}
line = []
def read():
    try:
        proc.stdin.write(json.dumps(init) + "\n"); proc.stdin.flush()
        line.append(proc.stdout.readline())
    except OSError:
        pass
t = threading.Thread(target=read, daemon=True); t.start(); t.join(10)
proc.kill(); proc.wait()
ok = bool(line) and "result" in json.loads(line[0] or "{}")
print(f"peers: preflight initialize: {'ok' if ok else 'FAILED ' + repr(line[:1])}")
sys.exit(0 if ok else 1)
EOF

# --- tracing wrappers ----------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zenmode-peers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
bin_for() {  # bin_for PEER -> path of the binary that peer should spawn
  if [ "${PEERS_TRACE:-1}" = 0 ]; then echo "$BIN"; return; fi
  local dir="$WORK/trace/$1" wrapper="$WORK/bin/$1/zenmode"
  mkdir -p "$dir" "$(dirname "$wrapper")"
  cat > "$wrapper" <<EOF
#!/usr/bin/env bash
# zenmode with its stdio copied to $dir/<pid>.in / .out (exec keeps the pid: signals reach zenmode).
exec '$BIN' "\$@" < <(exec tee -a "$dir/\$\$.in") > >(exec tee -a "$dir/\$\$.out")
EOF
  chmod +x "$wrapper"
  echo "$wrapper"
}

# --- run ---------------------------------------------------------------------
declare -A LINE=()
total_passed=0
total_failed=0
run_peer() {  # run_peer PEER LABEL CMD...
  local peer=$1 label=$2; shift 2
  local log="$WORK/$peer.log" rc line
  echo
  say "---- $label ----"
  ZENMODE_BIN=$(bin_for "$peer") timeout -k 10 "$PEER_TIMEOUT" "$@" </dev/null 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E "^$label: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -n 1)
  if [ -z "$line" ]; then
    [ "$rc" = 124 ] && line="$label: 0 passed, 1 failed (timed out after ${PEER_TIMEOUT}s)" \
                    || line="$label: 0 passed, 1 failed (exit $rc, no result line)"
  elif [ "$rc" != 0 ] && [[ "$line" == *" 0 failed" ]]; then
    line="$line (but exit $rc)"
  fi
  LINE[$peer]="$line"
  local p f
  p=$(sed -E 's/^[^:]+: ([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/^[^:]+: [0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
  [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
}

wants python    && run_peer python    python-sdk  "$PY" "$HERE/python_client.py"
wants ts        && run_peer ts        ts-sdk      node "$HERE/ts_client.mjs"
wants inspector && run_peer inspector inspector   "$PY" "$HERE/inspector_check.py"
wants claude    && run_peer claude    claude-code "$PY" "$HERE/claude_check.py"

echo
if [ "${PEERS_TRACE:-1}" != 0 ]; then
  "$PY" "$HERE/trace_summary.py" "$WORK/trace" || true
  echo
fi
for p in "${PEERS[@]}"; do echo "${LINE[$p]}"; done
echo "peers: $total_passed passed, $total_failed failed"
[ "$total_failed" = 0 ] && [ "$total_passed" -gt 0 ]
