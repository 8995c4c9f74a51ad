#!/usr/bin/env bash
# SitePulse beside the Lighthouse CI server, side by side in one run (issues 36 and 46):
# ROUNDS (3) paired rounds of `wrk -t2 -c16` for DURATION (5) s each on
#   lhci    GET /v1/projects/{id}/builds?limit=1 of a real LHCI server (@lhci/server on Postgres)
#   mcp     POST /api/mcp tools/call get_latest_scan with an API key
#   budget  POST /api/external/budget-check with an API key
#   hello   a bare Go net/http hello (loadkit hello), and `pgbench -S -c16 -j2` on the same
#           Postgres: the composed floor 1/(1/hello + 1/pgbench), a request doing both
# and prints each one's requests/s, its ratio to LHCI's in the same round, the budget check's
# fraction of the floor, and each server process's CPU per request (cpu_ms, from /proc/PID/stat;
# robust to a busy machine) and that of the Postgres backends connected to its database
# (db_cpu_ms), with SitePulse's ratios to LHCI's. Then, unless INGEST=0, ingest end to end in the same round:
#   lhci-in POST /v1/projects/{id}/builds/{id}/runs of the Lighthouse report of
#           testdata/psi/home.mobile.json (its lighthouseResult, 265 kB, as `lhci upload` sends
#           it) into an unsealed build: LHCI parses the body, checks the build and inserts the run
#   sp-in   `loadkit ingest -c 16`: the same audit's PSI answer (340 kB) through what the pool does
#           with an audit's answer: lighthouse.ExtractPSI (scores, vitals, what explains the
#           result, its pictures) and store.SavePageResult (the result, its explain data and
#           its pictures, one statement under the scan's lease); no HTTP (results arrive from
#           the process's own audits)
# with results/s and the ratio. Each side first runs WARMUP (2) s of the same, not counted (0: none):
# the service's pool ingests for hours on connections it keeps, as the LHCI server serves; a
# fresh loadkit's first seconds cost more (its Postgres backends map the shared buffers they
# write through, its heap grows: 14-26% fewer results/s in its first 4 s than in its next 4 s
# on 2026-12-06). Both services use one Postgres (PGURL); each round runs them one
# after the other, so a busy machine slows both. Needs wrk, pgbench and LHCI installed where
# LHCI_DIR says:
#   npm install --prefix /tmp/lhci --ignore-scripts @lhci/server@0.15 pg
# Creates and drops the databases sitepulse_vs_lhci_$SP_PORT, lhci_vs_$SP_PORT and
# lhci_vs_pgbench_$SP_PORT; 127.0.0.1 only, on the ports LHCI_PORT (18911), SP_PORT (18912) and
# HELLO_PORT (18913). SITEPULSE_BIN runs that binary instead of building this tree (a build of
# another commit, to compare).
#   LHCI_DIR=/tmp/lhci .ci/mcp-vs-lhci.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
LHCI_DIR=${LHCI_DIR:-/tmp/lhci}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-2}
LHCI_PORT=${LHCI_PORT:-18911}
SP_PORT=${SP_PORT:-18912}
HELLO_PORT=${HELLO_PORT:-18913}
DB=sitepulse_vs_lhci_$SP_PORT
LDB=lhci_vs_$SP_PORT
PGB=lhci_vs_pgbench_$SP_PORT
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for d in "$DB" "$LDB" "$PGB"; do dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for d in "$DB" "$LDB" "$PGB"; do
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null
  createdb --maintenance-db="$PGURL/postgres" "$d"
done
pgbench -q -i -s 1 "$PGURL/$PGB" >/dev/null 2>&1
wait_up() { for _ in $(seq 1 150); do curl -sf "$1" >/dev/null && return; sleep 0.2; done; echo "no answer from $1" >&2; exit 1; }

# LHCI: a project with one build, as `lhci upload` leaves it.
cat >"$work/lhci.js" <<EOF
require('$LHCI_DIR/node_modules/@lhci/server').createServer({port: $LHCI_PORT, logLevel: 'silent',
  storage: {storageMethod: 'sql', sqlDialect: 'postgres', sqlConnectionUrl: '$PGURL/$LDB'}})
EOF
node "$work/lhci.js" >"$work/lhci.log" 2>&1 &
lhci=$!
pids+=($lhci)
wait_up http://127.0.0.1:$LHCI_PORT/v1/projects
project=$(curl -sf -X POST http://127.0.0.1:$LHCI_PORT/v1/projects -H 'content-type: application/json' \
  -d '{"name":"demo","externalUrl":"https://demo.test","slug":"demo"}')
pid=$(sed -E 's/.*"id":"([^"]+)".*/\1/' <<<"$project")
token=$(sed -E 's/.*"token":"([^"]+)".*/\1/' <<<"$project")
build=$(curl -sf -X POST "http://127.0.0.1:$LHCI_PORT/v1/projects/$pid/builds" -H 'content-type: application/json' \
  -H "x-lhci-build-token: $token" -d '{"projectId":"'"$pid"'","lifecycle":"unsealed","branch":"main","hash":"abc123","commitMessage":"deploy","author":"a","avatarUrl":"","externalBuildUrl":"","runAt":"2026-11-27T00:00:00Z","committedAt":"2026-11-27T00:00:00Z"}')
bid=$(sed -E 's/.*"id":"([^"]+)".*/\1/' <<<"$build")
# The run LHCI's ingest stores: the same audit's Lighthouse report as SitePulse's ingest extracts.
node -e 'const p = require(process.argv[1]); process.stdout.write(JSON.stringify({url: p.lighthouseResult.finalUrl, lhr: JSON.stringify(p.lighthouseResult)}))' \
  "$PWD/testdata/psi/home.mobile.json" >"$work/run.json"

# SitePulse: one seeded site with a completed scan and an API key.
if [ -n "${SITEPULSE_BIN:-}" ]; then cp "$SITEPULSE_BIN" "$work/sitepulse"; else go build -o "$work/sitepulse" .; fi
go build -o "$work/loadkit" ./.ci/loadkit
export DATABASE_URL="$PGURL/$DB?sslmode=disable"
eval "$("$work/loadkit" seed -sites 1)" # LOAD_KEY, LOAD_SITE, ...
ADDR=127.0.0.1:$SP_PORT BASE_URL=http://127.0.0.1:$SP_PORT PLATFORM_CLIENT_SECRET=x LOG_LEVEL=warn "$work/sitepulse" >"$work/sitepulse.log" 2>&1 &
svc=$!
pids+=($svc)
wait_up http://127.0.0.1:$SP_PORT/healthz
"$work/loadkit" hello -addr "127.0.0.1:$HELLO_PORT" >/dev/null 2>&1 &
hello=$!
pids+=($hello)
wait_up "http://127.0.0.1:$HELLO_PORT/"
. .ci/cpu.sh # tck, cpu_ticks, db_snap, db_since, cpu_ms

run() { # name url [env...]: one wrk run of D (DURATION) s; prints rps, p50, p99 and requests
  local name=$1 url=$2
  shift 2
  local res
  res=$(env "$@" wrk -t2 -c16 -d"${D:-$DURATION}s" --latency -s .ci/wrk.lua "$url" | grep '^RESULT')
  [ "$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$res")" = 0 ] || { echo "$name: answers not 200: $res" >&2; exit 1; }
  printf '%s %s %s %s\n' "$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$res")" \
    "$(sed -E 's/.* p50_ms=([0-9.]+).*/\1/' <<<"$res")" "$(sed -E 's/.* p99_ms=([0-9.]+).*/\1/' <<<"$res")" \
    "$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$res")"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mcp='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"'"$LOAD_SITE"'"}}}'
echo "run: $(date -u +%FT%TZ), SitePulse ${SITEPULSE_BIN:-$(git rev-parse --short HEAD)}, @lhci/server $(node -p "require('$LHCI_DIR/node_modules/@lhci/server/package.json').version"), $(nproc) cores, $(pgbench --version), rounds $ROUNDS x ${DURATION}s"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-8s %9s %8s %8s %7s %9s %9s\n' round read rps p50_ms p99_ms x_lhci cpu_ms db_cpu_ms
for i in $(seq 1 "$ROUNDS"); do
  c0=$(cpu_ticks "$lhci") d0=$(db_snap "$LDB")
  read -r lr lp50 lp99 n < <(run lhci "http://127.0.0.1:$LHCI_PORT" WRK_PATH="/v1/projects/$pid/builds?limit=1")
  lcpu=$(cpu_ms "$(( $(cpu_ticks "$lhci") - c0 ))" "$n") ldb=$(cpu_ms "$(db_since "$LDB" "$d0")" "$n")
  printf '%-6s %-8s %9.0f %8s %8s %7s %9s %9s   load %s\n' "$i" lhci "$lr" "$lp50" "$lp99" 1 "$lcpu" "$ldb" "$(cut -d' ' -f1 /proc/loadavg)"
  for what in mcp budget; do
    if [ "$what" = mcp ]; then body=$mcp path=/api/mcp; else body='{"siteId":"'"$LOAD_SITE"'"}' path=/api/external/budget-check; fi
    c0=$(cpu_ticks "$svc") d0=$(db_snap "$DB")
    read -r r p50 p99 n < <(run "$what" "http://127.0.0.1:$SP_PORT" WRK_METHOD=POST WRK_PATH="$path" WRK_BEARER="$LOAD_KEY" WRK_BODY="$body")
    cpu=$(cpu_ms "$(( $(cpu_ticks "$svc") - c0 ))" "$n") dbc=$(cpu_ms "$(db_since "$DB" "$d0")" "$n")
    printf '%-6s %-8s %9.0f %8s %8s %7s %9s %9s   load %s; CPU per request x lhci: service %s, with Postgres %s\n' "$i" "$what" "$r" "$p50" "$p99" \
      "$(ratio "$r" "$lr")" "$cpu" "$dbc" "$(cut -d' ' -f1 /proc/loadavg)" "$(ratio "$lcpu" "$cpu")" "$(awk -v a="$lcpu" -v b="$ldb" -v c="$cpu" -v d="$dbc" 'BEGIN {printf "%.2f", (a + b) / (c + d)}')"
    [ "$what" = budget ] && br=$r
  done
  c0=$(cpu_ticks "$hello")
  read -r hr hp50 hp99 n < <(run hello "http://127.0.0.1:$HELLO_PORT")
  hcpu=$(cpu_ms "$(( $(cpu_ticks "$hello") - c0 ))" "$n")
  pg=$(pgbench -n -S -c16 -j2 -T"$DURATION" "$PGURL/$PGB" 2>/dev/null | awk '/^tps/ {print $3; exit}')
  floor=$(awk -v h="$hr" -v p="$pg" 'BEGIN {printf "%.0f", 1 / (1 / h + 1 / p)}')
  printf '%-6s floor: hello %.0f req/s (cpu_ms %s), pgbench -S %.0f tps, composed %s; budget check %.0f = %s of the floor   load %s\n' \
    "$i" "$hr" "$hcpu" "$pg" "$floor" "$br" "$(ratio "$br" "$floor")" "$(cut -d' ' -f1 /proc/loadavg)"
  if [ "${INGEST:-1}" != 0 ]; then
    lin=(WRK_METHOD=POST WRK_PATH="/v1/projects/$pid/builds/$bid/runs" WRK_BODY_FILE="$work/run.json" WRK_HEADER="x-lhci-build-token: $token")
    [ "$WARMUP" = 0 ] || D=$WARMUP run lhci-in "http://127.0.0.1:$LHCI_PORT" "${lin[@]}" >/dev/null # both sides run WARMUP s first, not counted
    c0=$(cpu_ticks "$lhci") d0=$(db_snap "$LDB")
    read -r lir _ _ ln < <(run lhci-in "http://127.0.0.1:$LHCI_PORT" "${lin[@]}")
    licpu=$(cpu_ms "$(( $(cpu_ticks "$lhci") - c0 ))" "$ln") lidb=$(cpu_ms "$(db_since "$LDB" "$d0")" "$ln")
    "$work/loadkit" ingest -c 16 -warmup "${WARMUP}s" -d "${DURATION}s" >"$work/ingest.out" &
    ing=$!
    sleep "$(awk -v w="$WARMUP" 'BEGIN {print w + 0.5}')"
    d1=$(db_snap "$DB") t1=$(date +%s.%N)
    sleep "$((DURATION - 2))"
    d2=$(db_since "$DB" "$d1") t2=$(date +%s.%N) # before loadkit ends: its backends end with it
    wait "$ing"
    sres=$(grep '^RESULT' "$work/ingest.out")
    sir=$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$sres")
    sicpu=$(sed -E 's/.*cpu_ms_per_request=([0-9.]+).*/\1/' <<<"$sres")
    # The backends' CPU between the two readings in loadkit's run, per result at its rate.
    sidb=$(awk -v t="$d2" -v hz="$tck" -v r="$sir" -v a="$t1" -v b="$t2" 'BEGIN {printf "%.3f", t / hz * 1000 / (r * (b - a))}')
    printf '%-6s ingest: lhci %.0f runs/s (%s runs, cpu_ms %s, db_cpu_ms %s), SitePulse %.0f results/s (%s, cpu_ms %s, db_cpu_ms %s) = %s x lhci; CPU per result x lhci: %s, with Postgres %s   load %s\n' \
      "$i" "$lir" "$ln" "$licpu" "$lidb" "$sir" "$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$sres")" "$sicpu" "$sidb" "$(ratio "$sir" "$lir")" "$(ratio "$licpu" "$sicpu")" \
      "$(awk -v a="$licpu" -v b="$lidb" -v c="$sicpu" -v d="$sidb" 'BEGIN {printf "%.2f", (a + b) / (c + d)}')" "$(cut -d' ' -f1 /proc/loadavg)"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
