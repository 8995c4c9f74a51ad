#!/usr/bin/env bash
# Beacon ingest of a real SitePulse process on Postgres (issue 45): a fresh database, the binary
# built from this tree with the demo account (-demo), the limits moved out of the way (one address
# sends everything here; the daily cap too, so every beacon is written rather than sampled), the
# demo site's beacon id made by opening its Edit page signed in, then ROUNDS rounds of
# `wrk -t2 -c16` for DURATION posting beacons as the script sends them (five figures with
# attribution, 50 paths, phone and desktop; .ci/beacon-wrk.lua). Prints each round's beacons/s, p50
# and p99, the load average, and checks that Postgres holds every accepted beacon (the site-wide
# bins count each page view once). wrk and the service share this machine's cores.
#   .ci/beacon-wrk.sh
# 127.0.0.1 only, port BEACON_PORT (31090); creates and drops the database sp_beacon_wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
PORT=${BEACON_PORT:-31090}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-15s}
DB=sp_beacon_wrk
base="http://127.0.0.1:$PORT"
work=$(mktemp -d)
svc=
cleanup() {
  if [ -n "$svc" ]; then kill "$svc" 2>/dev/null || true; wait "$svc" 2>/dev/null || true; fi
  dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$DB" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
dropdb --force --if-exists --maintenance-db="$PGURL/postgres" "$DB" 2>/dev/null
createdb --maintenance-db="$PGURL/postgres" "$DB"
go build -o "$work/sitepulse" .
ADDR="127.0.0.1:$PORT" BASE_URL="$base" DATABASE_URL="$PGURL/$DB?sslmode=disable" \
  BEACON_DAILY_CAP=1000000000000 BEACON_SITE_RATE=1000000000 BEACON_ADDR_RATE=1000000000 \
  "$work/sitepulse" -demo >"$work/log" 2>&1 &
svc=$!
for _ in $(seq 1 150); do curl -sf "$base/readyz" >/dev/null && break; sleep 0.2; done
for _ in $(seq 1 50); do grep -q '^demo login:' "$work/log" && break; sleep 0.2; done
password=$(awk '/^demo login:/ {print $4}' "$work/log")
site=$(psql -At "$PGURL/$DB" -c "select id from sites order by created_at limit 1")
domain=$(psql -At "$PGURL/$DB" -c "select domain from sites where id = '$site'")
curl -s -c "$work/cookies" -o /dev/null -H "Origin: $base" --data-urlencode email=demo@example.com \
  --data-urlencode "password=$password" "$base/login"
curl -s -b "$work/cookies" -o /dev/null "$base/sites/$site/edit" # makes the site's beacon id
key=$(psql -At "$PGURL/$DB" -c "select public_id from beacon_keys where site_id = '$site'")
[ -n "$key" ] || { echo "no beacon id for the demo site" >&2; exit 1; }
stored() { psql -At "$PGURL/$DB" -c "select coalesce(sum(count), 0)::bigint from beacon_bins where site_id = '$site' and path = '' and metric = 'nav'"; }
echo "run: $(date -u +%FT%TZ), SitePulse $(git rev-parse --short HEAD), $(nproc) cores, rounds $ROUNDS x $DURATION, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
total=0
for r in $(seq 1 "$ROUNDS"); do
  line=$(ORIGIN="https://$domain" KEY="$key" wrk -t2 -c16 -d"$DURATION" -s .ci/beacon-wrk.lua "$base" | tail -1)
  echo "$r  $line  load $(cut -d' ' -f1 /proc/loadavg)"
  total=$((total + $(sed -E 's/^requests ([0-9]+).*/\1/' <<<"$line")))
done
sleep 3 # the last flush (BEACON_FLUSH_MS, 1 s)
got=$(stored)
echo "accepted $total beacons; Postgres holds $got page views"
# wrk counts the answers it read before its time ran out; up to one request a connection (16) a
# round was still in flight then and is stored too.
[ "$got" -ge "$total" ] && [ "$got" -le $((total + 16 * ROUNDS)) ] || { echo "MISMATCH: stored $got, accepted $total" >&2; exit 1; }
