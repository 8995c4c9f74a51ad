#!/usr/bin/env bash
# Load-tests a real SitePulse process on a database of its own and prints one table: requests/s,
# p50/p99 latency and the process's peak RSS per scenario, plus its idle RSS.
#   .ci/load.sh                      # every scenario, 10 s each
#   LOAD_DURATION=5s .ci/load.sh     # shorter runs
#   LOAD_ONLY=MCP .ci/load.sh        # only the scenarios whose name matches (grep -E)
#   LOAD_LOG=/tmp/sp.log .ci/load.sh # keep the service's log (LOAD_LOG_LEVEL, default warn)
# Scenarios (wrk with .ci/wrk.lua, one wrk thread so the service keeps the cores):
#   budget-check at 16 and 64 connections; MCP tools/call (get_latest_scan at 16 and 64,
#   get_regression_report at 16); the web UI's site page with a session cookie at 16; and last the
#   publish webhook: 1,000 signed publishes (distinct bodies, so the replay guard passes them) over
#   100 connected sites at 32 connections (a site's 10 publishes back to back, so they race for
#   its one scan), then it waits for the queued scans and fails unless there are exactly 100, all
#   complete. Scans are audited against a PSI double (`loadkit psi`: the real fixtures
#   after LOAD_PSI_DELAY, 1 s, so a scan outlasts its site's burst), never the network.
# Needs Postgres on 127.0.0.1:5432 (PGURL to change), wrk, createdb/dropdb. Creates database
# sitepulse_load and drops it at the end. Listens on 127.0.0.1 only (LOAD_PORT, LOAD_PSI_PORT).
# Peak RSS is VmHWM of /proc/<pid>/status, reset before each scenario (clear_refs 5) so each row
# has its own peak; idle RSS is VmRSS after start-up, and again after the load.
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=${LOAD_DB:-sitepulse_load}
PORT=${LOAD_PORT:-8790}
PSI_PORT=${LOAD_PSI_PORT:-8791}
DURATION=${LOAD_DURATION:-10s}
export DATABASE_URL="$PGURL/$DB?sslmode=disable"
base="http://127.0.0.1:$PORT"
work=$(mktemp -d)
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  dropdb --if-exists --maintenance-db="$PGURL/postgres" "$DB" || true
  if [ -n "${LOAD_LOG:-}" ]; then cp "$work/sitepulse.log" "$LOAD_LOG"; fi
  rm -rf "$work"
}
trap cleanup EXIT

dropdb --if-exists --maintenance-db="$PGURL/postgres" "$DB"
createdb --maintenance-db="$PGURL/postgres" "$DB"

go build -o "$work/sitepulse" .
go build -o "$work/loadkit" ./.ci/loadkit

"$work/loadkit" psi -addr "127.0.0.1:$PSI_PORT" -delay "${LOAD_PSI_DELAY:-1s}" 2>"$work/psi.log" &
pids+=($!)
seeded=$("$work/loadkit" seed -sites 100)
eval "$seeded"   # LOAD_KEY, LOAD_SITE, LOAD_SCAN, LOAD_COOKIE

export PLATFORM_CLIENT_SECRET
PLATFORM_CLIENT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ADDR="127.0.0.1:$PORT" BASE_URL="$base" PAGESPEED_API_URL="http://127.0.0.1:$PSI_PORT/runPagespeed" \
  PSI_RATE_LIMIT=100000 LOG_LEVEL=${LOAD_LOG_LEVEL:-warn} "$work/sitepulse" >"$work/sitepulse.log" 2>&1 &
svc=$!
pids+=($svc)
for _ in $(seq 1 50); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.2; done
curl -sf "$base/healthz" >/dev/null || { cat "$work/sitepulse.log"; exit 1; }

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$svc/status"; }
mib() { awk -v k="$1" '{printf "%.1f", k / 1024}' <<<"$1"; }
sleep 2
idle_rss=$(kib VmRSS)

rows=()
# scenario NAME CONNECTIONS [wrk args...]: the WRK_* variables of .ci/wrk.lua are set by the caller.
scenario() {
  local name=$1 conns=$2
  shift 2
  if ! grep -Eq -- "${LOAD_ONLY:-.}" <<<"$name"; then return 0; fi
  echo 5 >"/proc/$svc/clear_refs" 2>/dev/null || true
  local load
  load=$(awk '{print $1" "$2" "$3}' /proc/loadavg)
  wrk -t1 -c"$conns" --latency -s .ci/wrk.lua "$@" "$base" | tee "$work/wrk.out"
  local r
  r=$(grep '^RESULT ' "$work/wrk.out")
  # RESULT requests=N rps=N p50_ms=N p99_ms=N non200=N socket_errors=N
  eval "${r#RESULT }"
  rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$name" "$conns" "$requests" "$rps" "$p50_ms" "$p99_ms" \
    "$non200" "$(mib "$(kib VmHWM)")" "$load")")
  if [ "$non200" != 0 ] || [ "$socket_errors" != 0 ]; then
    echo "load: $name: $non200 answers were not 200, $socket_errors socket errors" >&2
    failed=1
  fi
}
failed=0

export WRK_METHOD=POST WRK_PATH=/api/external/budget-check WRK_BEARER="$LOAD_KEY" WRK_BODY="{\"siteId\":\"$LOAD_SITE\"}"
scenario "budget-check" 16 -d"$DURATION"
scenario "budget-check" 64 -d"$DURATION"

call() { echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{\"siteId\":\"$LOAD_SITE\"}}}"; }
export WRK_PATH=/api/mcp WRK_BODY
WRK_BODY=$(call get_latest_scan)
scenario "MCP tools/call get_latest_scan" 16 -d"$DURATION"
scenario "MCP tools/call get_latest_scan" 64 -d"$DURATION"
WRK_BODY=$(call get_regression_report)
scenario "MCP tools/call get_regression_report" 16 -d"$DURATION"
unset WRK_BEARER WRK_BODY

export WRK_METHOD=GET WRK_PATH="/sites/$LOAD_SITE" WRK_COOKIE="$LOAD_COOKIE"
scenario "web UI site page (GET /sites/{id})" 16 -d"$DURATION"
unset WRK_COOKIE

if grep -Eq -- "${LOAD_ONLY:-.}" <<<webhook; then
"$work/loadkit" bodies -sites 100 -n 1000 -secret "$PLATFORM_CLIENT_SECRET" -out "$work/bodies.txt"
export WRK_PATH=/api/webhooks/platform WRK_BODIES="$work/bodies.txt" WRK_STOP_AFTER=1000
scenario "webhook (1,000 publishes, 100 sites)" 32 -d20s
unset WRK_BODIES WRK_STOP_AFTER
if [ "$requests" != 1000 ]; then echo "load: webhook: $requests publishes counted, want 1000" >&2; failed=1; fi
count=$("$work/loadkit" count -want 100 -timeout 5m) || { echo "$count"; failed=1; }
echo "webhook scans: $count"
fi
sleep 2
after_rss=$(kib VmRSS)
hwm_scans=$(kib VmHWM)

echo
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m), $(go version | awk '{print $3}'), $(psql "$PGURL/$DB" -Atc 'show server_version' | awk '{print "Postgres "$1}')"
echo "idle RSS after start-up: $(mib "$idle_rss") MiB; after the load: $(mib "$after_rss") MiB; peak since the last scenario began (with the webhook run: its 100 scans too): $(mib "$hwm_scans") MiB"
echo "webhook scans: ${count:-not run}"
echo
echo '| scenario | connections | requests | req/s | p50 ms | p99 ms | non-200 | peak RSS MiB | load avg 1/5/15 |'
echo '|---|---|---|---|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
if [ "$failed" != 0 ]; then
  echo "load: FAILED (see above); service log:" >&2
  grep -v SCAN_ALREADY_ACTIVE "$work/sitepulse.log" | tail -50 >&2
  exit 1
fi
