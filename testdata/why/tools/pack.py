#!/usr/bin/env python3
"""Put one pair of the corpus together: the two Lighthouse runs wrapped as PSI ships them, the change.
usage: pack.py SITES_DIR RUNS_DIR CORPUS_DIR PAIR[.strategy] ...
  PAIR.strategy       -> runs RUNS_DIR/PAIR/{before,after}.strategy.1.lhr.json
  unchanged-N.mobile  -> run N of RUNS_DIR/unchanged/*.mobile
  unchanged-about.desktop, gallery-300.mobile -> RUNS_DIR/unchanged, RUNS_DIR/gallery
Screenshots (the filmstrip, the final and the full-page screenshot: nothing the explanation reads)
are dropped to keep the corpus small, except in the pairs the scan page is shown with
(heavy-lcp-png, late-consent-banner), which stay whole. CORPUS_DIR/PAIR/truth.json must exist first.
"""
import json, os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'site', 'tools'))
import wrap_psi

SITES, RUNS, CORPUS = sys.argv[1:4]
WHOLE = ('heavy-lcp-png', 'late-consent-banner')


def source(pair):
    name, strat = pair.rsplit('.', 1)
    if name.startswith('unchanged-about'):
        return 'unchanged', strat, 1
    if name.startswith('unchanged-'):
        return 'unchanged', strat, int(name.split('-')[1])
    if name == 'gallery-300':
        return 'gallery', strat, 1
    return name, strat, 1


for pair in sys.argv[4:]:
    run, strat, n = source(pair)
    out = os.path.join(CORPUS, pair)
    assert os.path.exists(os.path.join(out, 'truth.json')), 'write the truth first: ' + pair
    for side in ('before', 'after'):
        lhr = json.load(open(os.path.join(RUNS, run, '%s.%s.%d.lhr.json' % (side, strat, n))))
        if lhr.get('runtimeError'):
            sys.exit('%s %s: runtimeError %s' % (pair, side, lhr['runtimeError']))
        if run not in WHOLE:
            for a in ('screenshot-thumbnails', 'final-screenshot'):
                lhr['audits'].get(a, {}).pop('details', None)
            lhr.pop('fullPageScreenshot', None)
        psi = wrap_psi.wrap(lhr)
        with open(os.path.join(out, side + '.json'), 'w') as f:
            json.dump(psi, f, indent=2, ensure_ascii=False)
            f.write('\n')
    d = subprocess.run([sys.executable, os.path.join(HERE, 'diff.py'), os.path.join(SITES, run, 'before'),
                        os.path.join(SITES, run, 'after')], capture_output=True, text=True, check=True).stdout
    open(os.path.join(out, 'change.diff'), 'w').write(d or '# no change: before and after serve the same site\n')
    print(pair, os.path.getsize(os.path.join(out, 'before.json')), os.path.getsize(os.path.join(out, 'after.json')))
