#!/usr/bin/env bash
# MCP get_latest_scan and the budget check with an API key, two builds side by side (issues 36
# and 46): BEFORE (a commit, default the merge base 42e8882) and this tree, each a real
# SitePulse process on a database of its own (one seeded site each), ROUNDS (3) paired rounds
# in which each read runs `wrk -t2 -c16` for DURATION (5) seconds on before and on after (in
# turn first).
# Prints requests/s, p50/p99 and each process's CPU per request (cpu_ms, from /proc/PID/stat)
# and that of the Postgres backends connected to its database (db_cpu_ms): on a shared machine
# requests/s swing with the load while CPU per request moves much less, and both sides of a
# round suffer alike. POOLURL (a PgBouncer from .ci/pgbouncer.sh) sends this tree's process
# through it. WHAT=mcp or WHAT=budget runs one read only. Creates and drops the databases
# sitepulse_mkp_before_$PORT and sitepulse_mkp_after_$PORT; 127.0.0.1 only, on ports PORT
# (8797, this tree) and PORT+1 (before).
#   BEFORE=952f659 PORT=31521 .ci/mcp-key-paired.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
POOLURL=${POOLURL:-$PGURL}
BEFORE=${BEFORE:-42e8882}
PORT=${PORT:-8797}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for b in before after; do dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "sitepulse_mkp_${b}_$PORT" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/before"
git archive "$BEFORE" | tar -x -C "$work/before"
(cd "$work/before" && go build -o "$work/sitepulse-before" .)
go build -o "$work/sitepulse-after" .
go build -o "$work/loadkit" ./.ci/loadkit
declare -A svc key site port=([after]=$PORT [before]=$((PORT + 1)))
for b in before after; do
  db=sitepulse_mkp_${b}_$PORT
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$db" 2>/dev/null
  createdb --maintenance-db="$PGURL/postgres" "$db"
  eval "$(DATABASE_URL="$PGURL/$db?sslmode=disable" "$work/loadkit" seed -sites 1)" # LOAD_KEY, LOAD_SITE, ...
  key[$b]=$LOAD_KEY site[$b]=$LOAD_SITE
  url="$PGURL/$db?sslmode=disable"
  [ "$b" = after ] && url="$POOLURL/$db?sslmode=disable"
  DATABASE_URL="$url" DATABASE_DIRECT_URL="$PGURL/$db?sslmode=disable" ADDR="127.0.0.1:${port[$b]}" BASE_URL="http://127.0.0.1:${port[$b]}" \
    PLATFORM_CLIENT_SECRET=x LOG_LEVEL=warn "$work/sitepulse-$b" >"$work/$b.log" 2>&1 &
  svc[$b]=$!
  pids+=(${svc[$b]})
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:${port[$b]}/healthz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:${port[$b]}/healthz" >/dev/null || { cat "$work/$b.log"; exit 1; }
done
. .ci/cpu.sh # tck, cpu_ticks, db_snap, db_since, cpu_ms
reads=${WHAT:-mcp budget}
echo "run: $(date -u +%FT%TZ), before $BEFORE, after $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes), $(nproc) cores, 'after' on ${POOLURL##*@}, rounds $ROUNDS x ${DURATION}s"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-7s %-7s %9s %8s %8s %8s %9s\n' round read build rps p50_ms p99_ms cpu_ms db_cpu_ms
for i in $(seq 1 "$ROUNDS"); do
  for what in $reads; do
    order="before after"
    [ $((i % 2)) = 0 ] && order="after before" # the load moves during a round: each build goes first in turn
    for b in $order; do
      if [ "$what" = mcp ]; then
        path=/api/mcp body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"'"${site[$b]}"'"}}}'
      else
        path=/api/external/budget-check body='{"siteId":"'"${site[$b]}"'"}'
      fi
      c0=$(cpu_ticks "${svc[$b]}") d0=$(db_snap "sitepulse_mkp_${b}_$PORT")
      res=$(WRK_METHOD=POST WRK_PATH=$path WRK_BEARER="${key[$b]}" WRK_BODY="$body" wrk -t2 -c16 -d"${DURATION}s" --latency -s .ci/wrk.lua "http://127.0.0.1:${port[$b]}" | grep '^RESULT')
      c1=$(cpu_ticks "${svc[$b]}") d1=$(db_since "sitepulse_mkp_${b}_$PORT" "$d0")
      [ "$(sed -E 's/.* non200=([0-9]+).*/\1/' <<<"$res")" = 0 ] || { echo "$b $what: answers not 200: $res"; exit 1; }
      n=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$res")
      printf '%-6s %-7s %-7s %9.0f %8s %8s %8s %9s   load %s\n' "$i" "$what" "$b" "$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$res")" \
        "$(sed -E 's/.* p50_ms=([0-9.]+).*/\1/' <<<"$res")" "$(sed -E 's/.* p99_ms=([0-9.]+).*/\1/' <<<"$res")" \
        "$(cpu_ms $((c1 - c0)) "$n")" "$(cpu_ms "$d1" "$n")" "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
