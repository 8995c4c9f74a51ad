#!/usr/bin/env bash
# The reads at the size SitePulse is sized for (issue 46), on a database `loadkit fleet` seeded:
# a real SitePulse process on it, first straight on Postgres, then through a PgBouncer of its own
# in transaction mode (.ci/pgbouncer.sh; migrations and sessions on DATABASE_DIRECT_URL), and per
# scenario wrk (.ci/wrk.lua, one thread) for FLEET_DURATION at FLEET_CONNS connections; prints one
# table: requests/s, p50 and p99, non-200 answers, the load average.
#   createdb sp_fleet
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/sp_fleet?sslmode=disable \
#     go run ./.ci/loadkit fleet -sites 2000 -pages 20 -days 365 -detail-days 30 -out /tmp/fleet.env
#   FLEET_DB=sp_fleet FLEET_ENV=/tmp/fleet.env .ci/fleet.sh
# Scenarios: the home page (GET /: its first page, 50 of the workspace's sites), a site page (GET /sites/{id}: its
# scans, the latest two scans' pages and the trend of 50 scans), the export of the latest scan
# (GET /api/sites/{id}/export, CSV), MCP get_latest_scan and get_trend (limit 50) with the API key,
# and the budget check. Listens on 127.0.0.1 only (FLEET_PORT, default 31400).
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=${FLEET_DB:-sp_fleet}
PORT=${FLEET_PORT:-31400}
DURATION=${FLEET_DURATION:-10s}
CONNS=${FLEET_CONNS:-4}
# shellcheck disable=SC1090
. "${FLEET_ENV:?FLEET_ENV: the file loadkit fleet -out wrote}"
base="http://127.0.0.1:$PORT"
work=$(mktemp -d)
svc=
bouncer=

cleanup() {
  if [ -n "$svc" ]; then kill "$svc" 2>/dev/null || true; wait "$svc" 2>/dev/null || true; fi
  if [ -n "$bouncer" ]; then kill "$(cat "$bouncer")" 2>/dev/null || true; rm -rf "$(dirname "$bouncer")"; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/sitepulse" .

start() { # start DATABASE_URL: the service on it, migrations on the direct URL
  ADDR="127.0.0.1:$PORT" BASE_URL="$base" DATABASE_URL="$1" DATABASE_DIRECT_URL="$PGURL/$DB?sslmode=disable" \
    ROLE=web PAGESPEED_API_URL=http://127.0.0.1:9/runPagespeed LOG_LEVEL=warn "$work/sitepulse" >"$work/sitepulse.log" 2>&1 &
  svc=$!
  for _ in $(seq 1 100); do curl -sf "$base/healthz" >/dev/null && return 0; sleep 0.2; done
  cat "$work/sitepulse.log"
  exit 1
}
stop() { kill "$svc"; wait "$svc" 2>/dev/null || true; svc=; }

rows=()
scenario() { # scenario WHERE NAME: the WRK_* variables of .ci/wrk.lua are set by the caller
  local load
  load=$(awk '{print $1" "$2" "$3}' /proc/loadavg)
  wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s .ci/wrk.lua "$base" >"$work/wrk.out"
  local r
  r=$(grep '^RESULT ' "$work/wrk.out")
  eval "${r#RESULT }" # requests rps p50_ms p99_ms non200 socket_errors
  rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$2" "$1" "$requests" "$rps" "$p50_ms" "$p99_ms" "$non200" "$load")")
}

call() { echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{\"siteId\":\"$LOAD_SITE\"$2}}}"; }

all() {
  export WRK_METHOD=GET WRK_COOKIE="$LOAD_COOKIE"
  WRK_PATH=/ scenario "$1" "home page (GET /, 50 sites a page)"
  WRK_PATH="/sites/$LOAD_SITE" scenario "$1" "site page with its trend (GET /sites/{id})"
  WRK_PATH="/api/sites/$LOAD_SITE/export?scanId=$LOAD_SCAN" scenario "$1" "export of a scan (CSV)"
  unset WRK_COOKIE
  export WRK_METHOD=POST WRK_BEARER="$LOAD_KEY" WRK_PATH=/api/mcp
  WRK_BODY=$(call get_latest_scan "") scenario "$1" "MCP get_latest_scan"
  WRK_BODY=$(call get_trend ',"limit":50') scenario "$1" "MCP get_trend (50 scans)"
  WRK_PATH=/api/external/budget-check WRK_BODY="{\"siteId\":\"$LOAD_SITE\"}" scenario "$1" "budget check"
  unset WRK_BEARER
}

start "$PGURL/$DB?sslmode=disable"
all Postgres
stop
eval "$(.ci/pgbouncer.sh)" # PGBOUNCER_PORT, PGBOUNCER_PID
bouncer=$PGBOUNCER_PID
start "postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/$DB?sslmode=disable"
all PgBouncer
stop

sites=$(psql "$PGURL/$DB" -Atc 'SELECT count(*) FROM sites')
results=$(psql "$PGURL/$DB" -Atc 'SELECT count(*) FROM page_results')
echo "machine: $(nproc) cores, $(go version | awk '{print $3}'), $(psql "$PGURL/$DB" -Atc 'show server_version' | awk '{print "Postgres "$1}'); $sites sites, $results page results, $CONNS connections, $DURATION each"
echo
echo '| scenario | through | requests | req/s | p50 ms | p99 ms | non-200 | load avg 1/5/15 |'
echo '|---|---|---|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
