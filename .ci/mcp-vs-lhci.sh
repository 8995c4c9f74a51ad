#!/usr/bin/env bash
# SitePulse's reads with an API key beside the Lighthouse CI server's, side by side in one run
# (issue 36): ROUNDS (3) paired rounds of `wrk -t2 -c16` for DURATION (5) s each on
#   lhci    GET /v1/projects/{id}/builds?limit=1 of a real LHCI server (@lhci/server on Postgres)
#   mcp     POST /api/mcp tools/call get_latest_scan with an API key
#   budget  POST /api/external/budget-check with an API key
# and prints each one's requests/s and its ratio to LHCI's in the same round. Both services use
# one Postgres (PGURL); each round runs them one after the other, so a busy machine slows both.
# Needs wrk and LHCI installed where LHCI_DIR says:
#   npm install --prefix /tmp/lhci --ignore-scripts @lhci/server@0.15 pg
# Creates and drops the databases sitepulse_vs_lhci and lhci_vs; 127.0.0.1 only.
#   LHCI_DIR=/tmp/lhci .ci/mcp-vs-lhci.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
LHCI_DIR=${LHCI_DIR:-/tmp/lhci}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
DB=sitepulse_vs_lhci
LDB=lhci_vs
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for d in "$DB" "$LDB"; do dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for d in "$DB" "$LDB"; do
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null
  createdb --maintenance-db="$PGURL/postgres" "$d"
done
wait_up() { for _ in $(seq 1 150); do curl -sf "$1" >/dev/null && return; sleep 0.2; done; echo "no answer from $1" >&2; exit 1; }

# LHCI: a project with one build, as `lhci upload` leaves it.
cat >"$work/lhci.js" <<EOF
require('$LHCI_DIR/node_modules/@lhci/server').createServer({port: 18911, logLevel: 'silent',
  storage: {storageMethod: 'sql', sqlDialect: 'postgres', sqlConnectionUrl: '$PGURL/$LDB'}})
EOF
node "$work/lhci.js" >"$work/lhci.log" 2>&1 &
pids+=($!)
wait_up http://127.0.0.1:18911/v1/projects
project=$(curl -sf -X POST http://127.0.0.1:18911/v1/projects -H 'content-type: application/json' \
  -d '{"name":"demo","externalUrl":"https://demo.test","slug":"demo"}')
pid=$(sed -E 's/.*"id":"([^"]+)".*/\1/' <<<"$project")
token=$(sed -E 's/.*"token":"([^"]+)".*/\1/' <<<"$project")
curl -sf -X POST "http://127.0.0.1:18911/v1/projects/$pid/builds" -H 'content-type: application/json' \
  -H "x-lhci-build-token: $token" -d '{"projectId":"'"$pid"'","lifecycle":"unsealed","branch":"main","hash":"abc123","commitMessage":"deploy","author":"a","avatarUrl":"","externalBuildUrl":"","runAt":"2026-11-27T00:00:00Z","committedAt":"2026-11-27T00:00:00Z"}' >/dev/null

# SitePulse: one seeded site with a completed scan and an API key.
go build -o "$work/sitepulse" .
go build -o "$work/loadkit" ./.ci/loadkit
export DATABASE_URL="$PGURL/$DB?sslmode=disable"
eval "$("$work/loadkit" seed -sites 1)" # LOAD_KEY, LOAD_SITE, ...
ADDR=127.0.0.1:18912 BASE_URL=http://127.0.0.1:18912 PLATFORM_CLIENT_SECRET=x LOG_LEVEL=warn "$work/sitepulse" >"$work/sitepulse.log" 2>&1 &
pids+=($!)
wait_up http://127.0.0.1:18912/healthz

run() { # name url [env...]: one wrk run; prints rps
  local name=$1 url=$2
  shift 2
  local res
  res=$(env "$@" wrk -t2 -c16 -d"${DURATION}s" --latency -s .ci/wrk.lua "$url" | grep '^RESULT')
  [ "$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$res")" = 0 ] || { echo "$name: answers not 200: $res" >&2; exit 1; }
  printf '%s %s %s\n' "$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$res")" \
    "$(sed -E 's/.* p50_ms=([0-9.]+).*/\1/' <<<"$res")" "$(sed -E 's/.* p99_ms=([0-9.]+).*/\1/' <<<"$res")"
}
mcp='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"'"$LOAD_SITE"'"}}}'
echo "run: $(date -u +%FT%TZ), SitePulse $(git rev-parse --short HEAD), @lhci/server $(node -p "require('$LHCI_DIR/node_modules/@lhci/server/package.json').version"), $(nproc) cores, rounds $ROUNDS x ${DURATION}s"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-8s %9s %8s %8s %9s\n' round read rps p50_ms p99_ms x_lhci
for i in $(seq 1 "$ROUNDS"); do
  read -r lr lp50 lp99 < <(run lhci "http://127.0.0.1:18911" WRK_PATH="/v1/projects/$pid/builds?limit=1")
  printf '%-6s %-8s %9.0f %8s %8s %9s   load %s\n' "$i" lhci "$lr" "$lp50" "$lp99" 1 "$(cut -d' ' -f1 /proc/loadavg)"
  for what in mcp budget; do
    if [ "$what" = mcp ]; then body=$mcp path=/api/mcp; else body='{"siteId":"'"$LOAD_SITE"'"}' path=/api/external/budget-check; fi
    read -r r p50 p99 < <(run "$what" "http://127.0.0.1:18912" WRK_METHOD=POST WRK_PATH="$path" WRK_BEARER="$LOAD_KEY" WRK_BODY="$body")
    printf '%-6s %-8s %9.0f %8s %8s %9.2f   load %s\n' "$i" "$what" "$r" "$p50" "$p99" "$(awk -v a="$r" -v b="$lr" 'BEGIN {print a / b}')" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
