#!/bin/bash
# usage: run_pair.sh SITES_DIR PAIR PATH STRATEGY RUNS OUT_DIR [extra lighthouse args...]
# Serves SITES_DIR/PAIR/before then SITES_DIR/PAIR/after on the SAME ports (main site 127.0.0.1:18101,
# third parties 127.0.0.1:18102, so URLs match), and runs Lighthouse RUNS times on each side:
#   OUT_DIR/PAIR/{before,after}.STRATEGY.N.lhr.json
# Third-party hostnames are mapped onto the local third-party server with Chromium's --host-resolver-rules;
# every other name is NOTFOUND (no DNS, no egress).
SITES="$1"; PAIR="$2"; PAGE="$3"; STRAT="$4"; RUNS="$5"; OUT="$6"; shift 6
HERE=$(cd "$(dirname "$0")" && pwd); SERVE="$HERE/../../site/serve.py"
LH_HOME=${LH_HOME:-$HOME/.sitepulse/lighthouse}
export CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium}
NODE=$LH_HOME/node_modules/.bin/node
LH=$LH_HOME/node_modules/lighthouse/cli/index.js
TP="cdn.widgetly.test static.hotjar.com assets.tagmgr.test cdn.abtest.test fonts.typehost.test cdn.consently.test"
RULES=""; for h in $TP; do RULES="${RULES}MAP $h:80 127.0.0.1:18102,"; done
RULES="${RULES}MAP * ~NOTFOUND,EXCLUDE 127.0.0.1,EXCLUDE localhost"
FLAGS="--headless=new --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --host-resolver-rules=\"$RULES\""
PRESET=""; [ "$STRAT" = "desktop" ] && PRESET="--preset=desktop"
mkdir -p "$OUT/$PAIR"
for side in before after; do
  python3 "$SERVE" "$SITES/$PAIR/$side/main" 18101 > "$OUT/$PAIR/$side.serve.log" 2>&1 & M=$!
  python3 "$SERVE" "$SITES/$PAIR/$side/thirdparty" 18102 --cors > "$OUT/$PAIR/$side.serve3p.log" 2>&1 & T=$!
  for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18101/robots.txt && curl -s -o /dev/null http://127.0.0.1:18102/ && break; sleep 0.2; done
  for n in $(seq "$RUNS"); do
    timeout 300 "$NODE" "$LH" "http://127.0.0.1:18101$PAGE" --output=json \
      --output-path="$OUT/$PAIR/$side.$STRAT.$n.lhr.json" $PRESET \
      --only-categories=performance,accessibility,best-practices,seo \
      --chrome-flags="$FLAGS" --quiet "$@"
    echo "rc=$? $PAIR $side $PAGE $STRAT run $n $(date -u +%FT%TZ)"
  done
  kill $M $T; wait $M $T 2>/dev/null
done
