#!/bin/sh
# Load-tests the budget check of a running SitePulse with wrk: 16 connections, one thread
# (WRK_THREADS to change it; on a 2-core machine one wrk thread leaves the cores to the service).
#   SITEPULSE_KEY=svc_... SITEPULSE_SITE=<uuid> .ci/wrk-budget-check.sh [http://127.0.0.1:8080] [10s]
# Start the service first, e.g. DATABASE_URL=... go run . -addr 127.0.0.1:8080 -demo, which
# prints a demo API key and site id (the site id is in the printed budget-check curl line).
# .ci/load.sh runs this scenario and the others (webhook, MCP, web UI) on a database of its own.
set -eu
base=${1:-http://127.0.0.1:8080}
duration=${2:-10s}
: "${SITEPULSE_KEY:?set SITEPULSE_KEY to an API key}"
: "${SITEPULSE_SITE:?set SITEPULSE_SITE to a site id}"
export WRK_METHOD=POST WRK_PATH=/api/external/budget-check WRK_BEARER="$SITEPULSE_KEY"
export WRK_BODY='{"siteId":"'"$SITEPULSE_SITE"'"}'
exec wrk -t"${WRK_THREADS:-1}" -c"${WRK_CONNECTIONS:-16}" -d"$duration" --latency -s "$(dirname "$0")/wrk.lua" "$base"
