#!/usr/bin/env bash
# Real OAuth clients against a freshly built SitePulse: the interop kit's check-oauth.mjs
# (oauth4webapi, Chromium, the SDK) and .ci/interop/oauth-sdk.mjs (the SDK's own auth() with
# DCR + client_secret_post, client_secret_basic, a Client ID Metadata Document, and the step-up
# from mcp:read to mcp:write). See .ci/README.md, "Interop: OAuth".
set -euo pipefail
cd "$(dirname "$0")/.."
KIT="${INTEROP_DIR:-/tmp/interop}"   # an installed copy of ../shared/interop (npm ci done)
PORT="${OAUTH_PORT:-18440}"
BASE="http://127.0.0.1:$PORT"
[ -d "$KIT/node_modules/oauth4webapi" ] || { echo "interop-oauth: no installed kit at $KIT (set INTEROP_DIR)" >&2; exit 2; }

work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The metadata document is served over https by the script: a throwaway certificate for
# 127.0.0.1, which the service trusts through SSL_CERT_FILE, and SCAN_ALLOW_PRIVATE=true so the
# outbound guard lets it reach 127.0.0.1 (never set on a shared service).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/cimd.key" -out "$work/cimd.crt" 2>/dev/null
go build -o "$work/sitepulse" .
BASE_URL="$BASE" SCAN_ALLOW_PRIVATE=true SSL_CERT_FILE="$work/cimd.crt" "$work/sitepulse" -addr "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q '^demo login:' "$work/server.log" && curl -sf "$BASE/.well-known/oauth-authorization-server" >/dev/null && break; sleep 0.1; done
read -r _ _ email password < <(grep '^demo login:' "$work/server.log")

# ES modules resolve packages next to the script: run it from a directory that borrows the
# kit's node_modules and lib/ without writing into the kit.
mkdir "$work/kit"
ln -s "$KIT/node_modules" "$work/kit/node_modules"
ln -s "$KIT/lib" "$work/kit/lib"
cp "$KIT/package.json" "$work/kit/"
cp .ci/interop/oauth-sdk.mjs "$work/kit/"

rc=0
if [ "${SKIP_KIT_CHECK:-}" != 1 ]; then
  echo "== check-oauth.mjs (the kit's; it pins the single scope mcp:read of the interface's first edition)"
  (cd "$KIT" && BASE_URL="$BASE" LOGIN_EMAIL="$email" LOGIN_PASSWORD="$password" node check-oauth.mjs) || echo "(check-oauth.mjs exit $?)"
fi
echo "== oauth-sdk.mjs"
(cd "$work/kit" && BASE_URL="$BASE" LOGIN_EMAIL="$email" LOGIN_PASSWORD="$password" CIMD_CERT="$work/cimd.crt" CIMD_KEY="$work/cimd.key" node oauth-sdk.mjs) || rc=$?
exit $rc
