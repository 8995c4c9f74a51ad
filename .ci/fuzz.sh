#!/bin/sh
# Runs every fuzz target of issue 7 item 5 for FUZZTIME each (default 60s), one worker each
# (-parallel=1), one after another, and stops at the first failure. A failing input is written
# to <package>/testdata/fuzz/<Target>/ by go test: commit it, and it runs as a regression test
# with plain `go test` from then on.
#   FUZZTIME=120s .ci/fuzz.sh
set -eu
cd "$(dirname "$0")/.."
t="${FUZZTIME:-60s}"
for target in \
	./mcp:FuzzServe \
	./handlers:FuzzPlatformWebhook \
	./handlers:FuzzBearer \
	./handlers:FuzzReportPath \
	./handlers:FuzzCSVRow \
	./oauth:FuzzMatchRedirectURI \
	./oauth:FuzzTokenEndpoints \
	./scanner:FuzzExtract; do
	pkg="${target%%:*}" name="${target#*:}"
	echo "== go test $pkg -run '^\$' -fuzz '^$name\$' -fuzztime $t -parallel=1"
	go test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$t" -parallel=1
done
