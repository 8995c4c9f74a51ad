#!/bin/sh
# Load-tests the budget check of a running SitePulse with wrk: 16 connections, one thread
# (WRK_THREADS to change it; on a 2-core machine one wrk thread leaves the cores to the service).
#   SITEPULSE_KEY=svc_... SITEPULSE_SITE=<uuid> .ci/wrk-budget-check.sh [http://127.0.0.1:8080] [10s]
# Start the service first, e.g. DATABASE_URL=... go run . -addr 127.0.0.1:8080 -demo, which
# prints a demo API key and site id (the site id is in the printed budget-check curl line).
set -eu
base=${1:-http://127.0.0.1:8080}
duration=${2:-10s}
: "${SITEPULSE_KEY:?set SITEPULSE_KEY to an API key}"
: "${SITEPULSE_SITE:?set SITEPULSE_SITE to a site id}"
exec wrk -t"${WRK_THREADS:-1}" -c16 -d"$duration" --latency -s "$(dirname "$0")/budget-check.lua" "$base"
