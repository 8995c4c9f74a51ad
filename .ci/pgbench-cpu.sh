#!/usr/bin/env bash
# Postgres's CPU per statement of pgbench scripts, for comparing two statements on a busy
# machine, where tps mostly says how much CPU pgbench itself got: for each FILE, `pgbench -n -f
# FILE -T 10 -c 8 -j 2 -M simple -P 1` on DB, and the CPU (user + system, /proc/PID/stat) of
# pgbench's backends from 2 s to 9 s over the transactions the progress lines count then.
# Alternate the files (a b a b a b) and read pairs. 127.0.0.1:5432 as postgres; the database is
# the caller's (e.g. one `loadkit seed -sites 1` seeded).
#   DB=sitepulse_mcpread .ci/pgbench-cpu.sh a.sql b.sql a.sql b.sql a.sql b.sql
set -euo pipefail
db=${DB:?DB names the database}
tck=$(getconf CLK_TCK)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ticks() { local c=0 p; for p in "$@"; do c=$((c + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $c; }
for f in "$@"; do
	pgbench -h 127.0.0.1 -U postgres -n -f "$f" -T 10 -c 8 -j 2 -M simple -P 1 "$db" >"$out" 2>&1 &
	bp=$!
	sleep 2
	pids=$(psql -h 127.0.0.1 -U postgres -Atc "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND application_name = 'pgbench'" postgres)
	c0=$(ticks $pids)
	sleep 7
	c1=$(ticks $pids)
	wait $bp
	# progress lines "progress: 3.0 s, 20000.1 tps, ...": seconds 3 to 9 cover 2 s to 9 s
	tx=$(awk '/^progress: [3-9]\.0 s/ {s += $4} END {printf "%d", s}' "$out")
	tps=$(awk '/^tps/ {printf "%.0f", $3}' "$out")
	awk -v f="$f" -v tps="$tps" -v tx="$tx" -v c=$((c1 - c0)) -v t="$tck" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN { printf "%-24s tps %6d  postgres_us_per_statement %.2f  load %s\n", f, tps, c / t * 1e6 / tx, l }'
done
