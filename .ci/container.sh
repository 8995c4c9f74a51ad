#!/usr/bin/env bash
# Builds docs/Containerfile as docs/container.md says and runs the image (read-only, no
# capabilities): /readyz must answer 200 within 30 s, and the process must run as the image's
# non-root user. Needs podman (or docker with a daemon); without one it says so and exits 0,
# the recipe then checked only by TestContainerfileIsStaticAndNonRoot. Everything is bounded by timeouts.
#   .ci/container.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tool=""
for t in podman docker; do
  if command -v "$t" >/dev/null && timeout 20 "$t" info >/dev/null 2>&1; then tool=$t; break; fi
done
if [ -z "$tool" ]; then
  echo "container: no podman or docker that answers here: the recipe is linted only (TestContainerfileIsStaticAndNonRoot)"
  exit 0
fi
ctx=$(mktemp -d)
name=sitepulse-ci-$$
tag=localhost/sitepulse-ci:$$
cleanup() {
  timeout 30 "$tool" rm -f "$name" >/dev/null 2>&1 || true
  timeout 30 "$tool" rmi -f "$tag" >/dev/null 2>&1 || true
  rm -rf "$ctx"
}
trap cleanup EXIT
mkdir -p "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/usr/share/zoneinfo/America"
CGO_ENABLED=0 go build -trimpath -o "$ctx/rootfs/sitepulse" .
cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
cp /usr/share/zoneinfo/America/Los_Angeles "$ctx/rootfs/usr/share/zoneinfo/America/"
timeout 300 "$tool" build -q -f docs/Containerfile -t "$tag" "$ctx" >/dev/null

# This CI machine's sandbox: cgroups v1 and v2 mixed (crun refuses them; runc runs), and no
# permission to raise rlimits, so the run pins them at what the sandbox allows. An ordinary host
# needs none of these flags.
extra=()
if [ "$tool" = podman ] && command -v runc >/dev/null; then extra+=(--runtime runc); fi
extra+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
port=$((20000 + RANDOM % 20000))
timeout 60 "$tool" run -d --name "$name" --read-only --cap-drop=ALL --network host "${extra[@]}" "$tag" -addr "127.0.0.1:$port" >/dev/null
ok=""
for _ in $(seq 1 150); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$port/readyz")" = 200 ]; then ok=1; break; fi
  sleep 0.2
done
if [ -z "$ok" ]; then
  echo "container: /readyz did not answer 200 within 30 s; the container's log:" >&2
  timeout 20 "$tool" logs "$name" >&2 || true
  exit 1
fi
user=$(timeout 20 "$tool" top "$name" user | awk 'NR == 2 {print $1}')
if [ "$user" = root ] || [ "$user" = 0 ]; then
  echo "container: the process runs as $user" >&2
  exit 1
fi
size=$(timeout 20 "$tool" image inspect "$tag" --format '{{.Size}}')
echo "container: $tool built docs/Containerfile ($size bytes), /readyz 200 on 127.0.0.1:$port, running as user $user"
