#!/usr/bin/env bash
# Starts a PgBouncer of its own in transaction mode in front of Postgres on 127.0.0.1:5432, as an
# operator runs it (issue 36): pool_mode = transaction, default_pool_size = 10, any database
# name passed through. Prints the port it listens on (127.0.0.1 only) and its pid file's path;
# stop it with `kill "$(cat PIDFILE)"`. PORT picks the port (default: a free one from 6432 up).
# Run as root it runs PgBouncer as the postgres user, which PgBouncer requires. auth_user lets any
# role of the server log in (the tests make one per schema: storetest.SchemaDSN).
#   eval "$(.ci/pgbouncer.sh)"   # sets PGBOUNCER_PORT and PGBOUNCER_PID
set -euo pipefail

port=${PORT:-}
if [ -z "$port" ]; then
  for p in $(seq 6432 6499); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
fi
dir=$(mktemp -d /tmp/pgbouncer.XXXXXX)
cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
auth_user = postgres
pool_mode = transaction
default_pool_size = 10
max_client_conn = 1000
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
echo '"postgres" ""' >"$dir/users.txt"
user=()
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$dir"
  user=(-u postgres)
fi
pgbouncer -d "${user[@]}" "$dir/pgbouncer.ini"
for _ in $(seq 1 50); do
  [ -s "$dir/pgbouncer.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
echo "PGBOUNCER_PORT=$port PGBOUNCER_PID=$dir/pgbouncer.pid"
