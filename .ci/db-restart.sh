#!/usr/bin/env bash
# db-restart.sh: restart the real Postgres cluster while a SitePulse process scans six sites
# against a local PSI double and a curl loop hits /healthz and the budget check; print what the
# clients saw during the outage, how long SitePulse took to recover, and how the scans ended.
#
#   sudo .ci/db-restart.sh            # from the repository root, as a user allowed to run pg_ctlcluster
#
# WARNING: this restarts the whole cluster (pg_ctlcluster $PG_CLUSTER restart). Every other
# client of it, other engineers' tests included, sees its connections dropped for those few
# seconds. Run it once, when nobody else is using the cluster. CI runs the same scenario without
# touching the server: TestSystemDatabaseRestartWhileScanning (system_faults_test.go) cuts a TCP proxy.
#
# Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable),
# PG_CLUSTER (default "15 main"), PORT (SitePulse, default 18473), PSI_PORT (default 18474),
# PSI_DELAY seconds per PSI answer (default 1.0). Needs go, psql, curl, openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

DB=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
PG_CLUSTER=${PG_CLUSTER:-15 main}
PORT=${PORT:-18473}
PSI_PORT=${PSI_PORT:-18474}
PSI_DELAY=${PSI_DELAY:-1.0}
SECRET=whsec_dbrestart
SCHEMA=dbrestart_$$
WORK=$(mktemp -d)
case "$DB" in *\?*) SDB="$DB&search_path=$SCHEMA" ;; *) SDB="$DB?search_path=$SCHEMA" ;; esac
now_ms() { date +%s%3N; }
sq() { PGOPTIONS="-c search_path=$SCHEMA" psql -qtA "$DB" "$@"; } # psql in the schema

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -q "$DB" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "building sitepulse"
go build -o "$WORK/sitepulse" .
psql -q "$DB" -c "CREATE SCHEMA $SCHEMA" >/dev/null

# The PSI double (loadkit psi): answers with the real fixture of the page and strategy after PSI_DELAY.
go build -o "$WORK/loadkit" ./.ci/loadkit
"$WORK/loadkit" psi -addr "127.0.0.1:$PSI_PORT" -fixtures testdata/psi -delay "${PSI_DELAY}s" 2>"$WORK/psi.log" & pids+=($!)

DATABASE_URL="$SDB" PAGESPEED_API_URL="http://127.0.0.1:$PSI_PORT/runPagespeed" PLATFORM_CLIENT_SECRET=$SECRET \
  BASE_URL="http://127.0.0.1:$PORT" "$WORK/sitepulse" -addr "127.0.0.1:$PORT" -demo >"$WORK/sitepulse.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
KEY=$(sed -n 's/^demo api key: //p' "$WORK/sitepulse.log")
SITE=$(sq -c "SELECT id FROM sites WHERE platform_site_id = 'demo-site'")
# Five more sites like the demo one, so that three workers are busy when the database goes.
sq -c "INSERT INTO sites (id, user_id, name, domain, platform_site_id, pages, created_at)
  SELECT gen_random_uuid(), user_id, 'Copy ' || g, domain, 'restart-' || g, pages, now()
  FROM sites, generate_series(1, 5) g WHERE platform_site_id = 'demo-site'" >/dev/null
for id in demo-site restart-1 restart-2 restart-3 restart-4 restart-5; do
  body="{\"siteId\":\"$id\"}"
  sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$SECRET" -r | cut -d' ' -f1)
  curl -s -o /dev/null -H "x-platform-signature: $sig" -H 'Content-Type: application/json' \
    --data-binary "$body" "http://127.0.0.1:$PORT/api/webhooks/platform"
done
echo "6 scans enqueued (5 pages x 2 strategies each, PSI answers in ${PSI_DELAY}s)"

# Clients: one request every 100 ms on each route; each line is "ms route status".
client() {
  local route=$1; shift
  while :; do
    printf '%s %s %s\n' "$(now_ms)" "$route" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@")"
    sleep 0.1
  done >>"$WORK/answers"
}
client healthz "http://127.0.0.1:$PORT/healthz" & pids+=($!)
client budget-check -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  --data-binary "{\"siteId\":\"$SITE\"}" "http://127.0.0.1:$PORT/api/external/budget-check" & pids+=($!)

# Wait until pages are being stored, then restart.
for _ in $(seq 150); do
  [ "$(sq -c "SELECT count(*) FROM page_results")" -ge 8 ] && break; sleep 0.1
done
echo "restarting the cluster ($PG_CLUSTER) with $(sq -c "SELECT count(*) FROM page_results") page results stored"
t0=$(now_ms)
pg_ctlcluster $PG_CLUSTER restart
t1=$(now_ms)
recovered=""
for _ in $(seq 600); do
  if curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null; then recovered=$(now_ms); break; fi
  sleep 0.05
done

# Every scan ends.
ended=""
for _ in $(seq 900); do
  if [ "$(sq -c "SELECT count(*) FROM scans WHERE status IN ('queued','running')" 2>/dev/null)" = 0 ]; then
    ended=$(now_ms); break
  fi
  sleep 0.1
done
sleep 0.5

echo
echo "== restart: pg_ctlcluster took $((t1 - t0)) ms"
if [ -n "$recovered" ]; then
  echo "== /healthz 200 again $((recovered - t1)) ms after pg_ctlcluster returned ($((recovered - t0)) ms after the restart began)"
else
  echo "== /healthz did not answer 200 within 30 s of the restart"
fi
echo "== answers (route status count), before / during (restart began .. healthz 200 again) / after:"
awk -v a="$t0" -v b="${recovered:-$t1}" '{ p = ($1 < a) ? "before" : ($1 <= b ? "during" : "after"); n[p " " $2 " " $3]++ }
  END { for (k in n) print "   " k, n[k] }' "$WORK/answers" | sort
echo "== the 6 published scans:"
sq -F' ' -c "SELECT status, count(*), min(pages_done), max(pages_done) FROM scans WHERE trigger = 'webhook' GROUP BY status" | \
  awk '{ print "   " $1 ": " $2 " scans, pages done " $3 "-" $4 }'
[ -n "$ended" ] && echo "== all scans ended $((ended - t1)) ms after pg_ctlcluster returned" || echo "== some scans had not ended 90 s after the restart"
echo "== page results: $(sq -c "SELECT count(*) FILTER (WHERE error = ''), count(*) FILTER (WHERE error <> '') FROM page_results
  WHERE scan_id IN (SELECT id FROM scans WHERE trigger = 'webhook')" | tr '|' ' ' | awk '{ print $1 " stored (want 60), " $2 " page errors" }')"
echo "== SitePulse log: $(grep -c 'database unavailable' "$WORK/sitepulse.log" || true) 'database unavailable' lines, $(grep -c 'database back' "$WORK/sitepulse.log" || true) 'database back', $(grep -c 'level=ERROR' "$WORK/sitepulse.log" || true) errors, $(grep -c 'status=500' "$WORK/sitepulse.log" || true) answers with status 500"
grep 'level=ERROR' "$WORK/sitepulse.log" | head -5 | sed 's/^/   /' || true
bad=$(awk '$3 != 200 && $3 != 503' "$WORK/answers" | wc -l)
echo "== answers other than 200 or 503: $bad"
[ "$bad" = 0 ] && [ -n "$ended" ] && [ -n "$recovered" ]
