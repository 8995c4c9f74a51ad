# CPU of a process and of a database's Postgres backends, read from /proc (Linux), for the
# paired measurements (.ci/mcp-vs-lhci.sh, .ci/mcp-key-paired.sh). Sourced; needs PGURL and psql.
tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; } # pid: its CPU (user + system) in clock ticks
db_snap() { # database: each client backend connected to it, as pid=ticks (its CPU in clock ticks); one
  # process reads them all (an awk per backend took seconds on a loaded machine: the second
  # reading came after loadkit had ended)
  local pids
  pids=$(psql -Atc "SELECT pid FROM pg_stat_activity WHERE datname = '$1' AND backend_type = 'client backend' AND pid <> pg_backend_pid()" "$PGURL/postgres")
  [ -z "$pids" ] || (cd /proc && cat $(sed 's|$|/stat|' <<<"$pids") 2>/dev/null) | awk '{printf "%s=%s ", $1, $14 + $15}'
}
db_since() { # database snapshot: the clock ticks its client backends spent since db_snap gave snapshot, by
  # backend: one gone since counts nothing (its ticks left with it; summing totals made that a
  # negative difference when a pooled connection closed), one new since counts all of its own
  local now
  now=$(db_snap "$1")
  awk -v a="$2" -v b="$now" 'BEGIN {
    n = split(a, x, " "); for (k = 1; k <= n; k++) { split(x[k], y, "="); before[y[1]] = y[2] }
    n = split(b, x, " "); for (k = 1; k <= n; k++) { split(x[k], y, "="); t += y[2] - (y[1] in before ? before[y[1]] : 0) }
    print t + 0 }'
}
cpu_ms() { awk -v t="$1" -v hz="$tck" -v n="$2" 'BEGIN {printf "%.4f", t / hz * 1000 / n}'; } # ticks requests: ms each
