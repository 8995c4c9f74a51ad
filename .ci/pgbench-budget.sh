#!/usr/bin/env bash
# Postgres alone: the budget check's one statement on its hot path (key and site version, when
# this process already holds the site's inputs) against the benchmark floor (a primary-key
# SELECT), both prepared, 16 clients, with pgbench. Shows how much of the endpoint's cost is the
# database's before any HTTP or JSON. Needs Postgres on 127.0.0.1:5432, createdb, psql, python3.
#   .ci/pgbench-budget.sh            (PGBENCH_TIME=5 seconds per statement)
set -euo pipefail
cd "$(dirname "$0")/.."
db=sitepulse_pgbench
pg="postgres://postgres@127.0.0.1:5432"
dropdb -h 127.0.0.1 -U postgres --if-exists "$db"; createdb -h 127.0.0.1 -U postgres "$db"
pid=
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; dropdb -h 127.0.0.1 -U postgres --if-exists "$db"' EXIT
tmp=$(mktemp -d)
# Seed the demo site (two real scans, budgets, a rule) through the service itself.
go build -o "$tmp/sitepulse" .
DATABASE_URL="$pg/$db?sslmode=disable" ADDR=127.0.0.1:0 "$tmp/sitepulse" -demo >"$tmp/log" 2>&1 & pid=$!
for _ in $(seq 1 60); do grep -q 'demo ready' "$tmp/log" && break; sleep 1; done
q() { psql -h 127.0.0.1 -U postgres -d "$db" -Atc "$1"; }
site=$(q "select id from sites limit 1"); keyhash=$(q "select key_hash from api_keys limit 1")
python3 - "$site" "$keyhash" "$tmp" <<'PY'
import re, sys
site, keyhash, tmp = sys.argv[1:]
src = open('store/postgres_budget.go').read()
sql = re.search(r'const budgetKeySQL = `(.*?)`', src, re.S).group(1)
sql = sql.replace('$1', f"'{site}'::uuid").replace('$2', f"'{keyhash}'")
open(f'{tmp}/budget.sql', 'w').write(' '.join(sql.split()) + '\n')
open(f'{tmp}/floor.sql', 'w').write(f"SELECT name FROM sites WHERE id = '{site}'\n")
PY
for f in floor budget; do
  printf '%-7s' "$f"; pgbench -h 127.0.0.1 -U postgres -n -M prepared -c 16 -j 2 -T "${PGBENCH_TIME:-5}" -f "$tmp/$f.sql" "$db" | grep -E '^tps'
done
