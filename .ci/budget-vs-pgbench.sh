#!/usr/bin/env bash
# The budget check against a bare Postgres read, side by side in one run (issue 25): ROUNDS (5)
# paired rounds, each `wrk -t2 -c16` on POST /api/external/budget-check of a real SitePulse
# process, then `pgbench -S -c16 -j2` (the built-in primary-key select) on the same Postgres,
# DURATION (5) seconds each. Prints each round's requests/s, p99 and ratio, then min/median/max
# of the ratio and the load average before and after: the machine may be shared, and both sides
# suffer alike. Needs Postgres on 127.0.0.1:5432 (PGURL), wrk, pgbench, createdb/dropdb.
# Creates databases sitepulse_bvp and sitepulse_bvp_pgbench and drops them at the end; listens on
# 127.0.0.1:${BVP_PORT:-8796} only. POOLURL (e.g. postgres://postgres@127.0.0.1:6432, a PgBouncer
# from .ci/pgbouncer.sh) sends the service's DATABASE_URL and pgbench through a pooler instead,
# with DATABASE_DIRECT_URL on PGURL (issue 36); MCP=1 adds MCP get_latest_scan with the API key.
#   .ci/budget-vs-pgbench.sh
#   POOLURL=postgres://postgres@127.0.0.1:6432 .ci/budget-vs-pgbench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=sitepulse_bvp
PGB=sitepulse_bvp_pgbench
POOLURL=${POOLURL:-$PGURL}
PORT=${BVP_PORT:-8796}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
export DATABASE_URL="$PGURL/$DB?sslmode=disable"
base="http://127.0.0.1:$PORT"
work=$(mktemp -d)
svc=

cleanup() {
  if [ -n "$svc" ]; then kill "$svc" 2>/dev/null || true; wait "$svc" 2>/dev/null || true; fi
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$DB" || true
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$PGB" || true
  rm -rf "$work"
}
trap cleanup EXIT

for d in "$DB" "$PGB"; do
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d"
  createdb --maintenance-db="$PGURL/postgres" "$d"
done
pgbench -q -i -s 1 "$PGURL/$PGB" >/dev/null 2>&1

go build -o "$work/sitepulse" .
go build -o "$work/loadkit" ./.ci/loadkit
eval "$("$work/loadkit" seed -sites 1)" # LOAD_KEY, LOAD_SITE, ...
if [ "$POOLURL" != "$PGURL" ]; then
  export DATABASE_DIRECT_URL="$DATABASE_URL" DATABASE_URL="$POOLURL/$DB?sslmode=disable"
fi
ADDR="127.0.0.1:$PORT" BASE_URL="$base" PLATFORM_CLIENT_SECRET=x LOG_LEVEL=warn "$work/sitepulse" >"$work/sitepulse.log" 2>&1 &
svc=$!
for _ in $(seq 1 50); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.2; done
curl -sf "$base/healthz" >/dev/null || { cat "$work/sitepulse.log"; exit 1; }
curl -sf -X POST -H "Authorization: Bearer $LOAD_KEY" -H 'Content-Type: application/json' \
  -d '{"siteId":"'"$LOAD_SITE"'"}' "$base/api/external/budget-check" >/dev/null # warm: inputs loaded

export WRK_METHOD=POST WRK_PATH=/api/external/budget-check WRK_BEARER="$LOAD_KEY"
export WRK_BODY='{"siteId":"'"$LOAD_SITE"'"}'
echo "run: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(go version | cut -d' ' -f3), $(pgbench --version), rounds $ROUNDS x ${DURATION}s"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %12s %10s %14s %12s %7s\n' round budget_rps p99_ms pgbench_tps pgb_lat_ms ratio
ratios=()
p99s=()
mcp_body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"'"$LOAD_SITE"'"}}}'
mcps=()
for i in $(seq 1 "$ROUNDS"); do
  if [ "${MCP:-}" = 1 ]; then # MCP get_latest_scan with the same API key, 16 connections
    mres=$(WRK_PATH=/api/mcp WRK_BODY="$mcp_body" wrk -t2 -c16 -d"${DURATION}s" --latency -s .ci/wrk.lua "$base" | grep '^RESULT')
    mbad=$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$mres")
    [ "$mbad" = 0 ] || { echo "round $i: $mbad MCP answers were not 200"; exit 1; }
    echo "round $i MCP get_latest_scan: $mres"
    mcps+=("$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$mres")")
  fi
  out=$(wrk -t2 -c16 -d"${DURATION}s" --latency -s .ci/wrk.lua "$base")
  res=$(grep '^RESULT' <<<"$out")
  rps=$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$res")
  p99=$(sed -E 's/.* p99_ms=([0-9.]+).*/\1/' <<<"$res")
  bad=$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$res")
  [ "$bad" = 0 ] || { echo "round $i: $bad answers were not 200; the log says:"; grep -o "err=.*" "$work/sitepulse.log" | sort | uniq -c | sort -rn | head -5; exit 1; }
  pg=$(pgbench -n -S -c16 -j2 -T"$DURATION" "$POOLURL/$PGB" 2>/dev/null)
  tps=$(awk '/^tps/ {print $3; exit}' <<<"$pg")
  lat=$(awk '/^latency average/ {print $4; exit}' <<<"$pg")
  ratio=$(awk -v a="$rps" -v b="$tps" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$ratio")
  p99s+=("$p99")
  printf '%-6s %12.0f %10s %14.0f %12s %7s   load %s\n' "$i" "$rps" "$p99" "$tps" "$lat" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
done
sorted=$(printf '%s\n' "${ratios[@]}" | sort -n)
p99s=$(printf '%s\n' "${p99s[@]}" | sort -n)
echo "p99 ms min/median/max: $(head -1 <<<"$p99s") / $(sed -n "$(( (ROUNDS + 1) / 2 ))p" <<<"$p99s") / $(tail -1 <<<"$p99s") (target < 10)"
echo "ratio min/median/max: $(head -1 <<<"$sorted") / $(sed -n "$(( (ROUNDS + 1) / 2 ))p" <<<"$sorted") / $(tail -1 <<<"$sorted")"
if [ "${#mcps[@]}" -gt 0 ]; then
  m=$(printf '%s\n' "${mcps[@]}" | sort -n)
  echo "MCP get_latest_scan req/s min/median/max: $(head -1 <<<"$m") / $(sed -n "$(( (ROUNDS + 1) / 2 ))p" <<<"$m") / $(tail -1 <<<"$m")"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
