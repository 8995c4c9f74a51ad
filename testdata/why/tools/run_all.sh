#!/bin/bash
# usage: run_all.sh SITES_DIR OUT_DIR [PAIR...] — every run of the corpus, with the settings of the runs kept
# (variants re-made after a first run are listed once, as last run; see ../README.md).
SITES="$1"; OUT="$2"; shift 2; HERE=$(cd "$(dirname "$0")" && pwd)
while read -r pair page strat runs extra; do
  [ -z "$pair" ] && continue
  if [ $# -gt 0 ]; then case " $* " in *" $pair "*) ;; *) continue;; esac; fi
  "$HERE/run_pair.sh" "$SITES" "$pair" "$page" "$strat" "$runs" "$OUT" $extra
done <<'JOBS'
heavy-lcp-png / mobile 1
late-consent-banner / mobile 1
hashed-bundle-renamed / mobile 1
slow-route /pricing mobile 1
css-render-blocking / mobile 1
unchanged / mobile 3
tag-manager-sync / mobile 1
font-other-host /pricing mobile 1 --throttling-method=devtools
lcp-css-background / desktop 1 --throttling-method=devtools
bundle-split / mobile 1
query-changed /blog/ mobile 1 --throttling-method=devtools
faster / mobile 1
gallery /gallery mobile 1
heavy-lcp-png / desktop 1
late-consent-banner / desktop 1
slow-route /pricing desktop 1
unchanged /about desktop 1
JOBS
