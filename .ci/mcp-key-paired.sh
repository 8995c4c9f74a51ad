#!/usr/bin/env bash
# MCP get_latest_scan with an API key (WHAT=budget: the budget check), two builds side by side
# on one database (issue 36):
# BEFORE (a commit, default the merge base 42e8882) and this tree, each a real SitePulse process,
# ROUNDS (3) paired rounds of `wrk -t2 -c16` for DURATION (5) seconds on each, then `pgbench -S
# -c16 -j2` on the same Postgres. Prints requests/s, p50/p99 and each build's ratio to pgbench:
# on a shared machine both sides of a round suffer alike. POOLURL (a PgBouncer from
# .ci/pgbouncer.sh) sends this tree's process through it (BEFORE's cannot work through it).
# Creates and drops the databases sitepulse_mkp and sitepulse_mkp_pgbench; 127.0.0.1 only.
#   .ci/mcp-key-paired.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
POOLURL=${POOLURL:-$PGURL}
BEFORE=${BEFORE:-42e8882}
DB=sitepulse_mkp
PGB=sitepulse_mkp_pgbench
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for d in "$DB" "$PGB"; do dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for d in "$DB" "$PGB"; do
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$d" 2>/dev/null
  createdb --maintenance-db="$PGURL/postgres" "$d"
done
pgbench -q -i -s 1 "$PGURL/$PGB" >/dev/null 2>&1

mkdir "$work/before"
git archive "$BEFORE" | tar -x -C "$work/before"
(cd "$work/before" && go build -o "$work/sitepulse-before" .)
go build -o "$work/sitepulse-after" .
go build -o "$work/loadkit" ./.ci/loadkit
export DATABASE_URL="$PGURL/$DB?sslmode=disable"
eval "$("$work/loadkit" seed -sites 1)" # LOAD_KEY, LOAD_SITE, ...
start() { # name port [env...]
  local name=$1 port=$2
  shift 2
  env "$@" ADDR="127.0.0.1:$port" BASE_URL="http://127.0.0.1:$port" PLATFORM_CLIENT_SECRET=x LOG_LEVEL=warn \
    "$work/sitepulse-$name" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.2; done
  cat "$work/$name.log"; exit 1
}
start after 8797 DATABASE_URL="$POOLURL/$DB?sslmode=disable" DATABASE_DIRECT_URL="$PGURL/$DB?sslmode=disable"
start before 8798
body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"'"$LOAD_SITE"'"}}}'
export WRK_METHOD=POST WRK_PATH=/api/mcp WRK_BEARER="$LOAD_KEY" WRK_BODY="$body"
if [ "${WHAT:-mcp}" = budget ]; then
  export WRK_PATH=/api/external/budget-check WRK_BODY='{"siteId":"'"$LOAD_SITE"'"}'
fi
echo "run: $(date -u +%FT%TZ), $WRK_PATH, before $BEFORE, after $(git rev-parse --short HEAD), $(nproc) cores, service of 'after' on ${POOLURL##*@}, rounds $ROUNDS x ${DURATION}s"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-7s %9s %8s %8s %12s %7s\n' round build rps p50_ms p99_ms pgbench_tps ratio
for i in $(seq 1 "$ROUNDS"); do
  for b in before:8798 after:8797; do
    res=$(wrk -t2 -c16 -d"${DURATION}s" --latency -s .ci/wrk.lua "http://127.0.0.1:${b#*:}" | grep '^RESULT')
    [ "$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$res")" = 0 ] || { echo "${b%%:*}: answers not 200: $res"; exit 1; }
    tps=$(pgbench -n -S -c16 -j2 -T"$DURATION" "$POOLURL/$PGB" 2>/dev/null | awk '/^tps/ {print $3; exit}')
    rps=$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$res")
    printf '%-6s %-7s %9.0f %8s %8s %12.0f %7.3f   load %s\n' "$i" "${b%%:*}" "$rps" \
      "$(sed -E 's/.* p50_ms=([0-9.]+).*/\1/' <<<"$res")" "$(sed -E 's/.* p99_ms=([0-9.]+).*/\1/' <<<"$res")" \
      "$tps" "$(awk -v a="$rps" -v b="$tps" 'BEGIN {print a / b}')" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
