// SitePulse's beacon (docs/field.md "The beacon"): web-vitals' attribution build, above, measures;
// this sends what it measured to SitePulse with sendBeacon as text/plain (no CORS preflight).
// It sends the page's path (never its query or fragment), a device class worked out here from
// the viewport (never the user agent string) and the figures; no cookie, no storage, no id.
var s = document.currentScript, k = s && s.getAttribute('data-site'), nb = navigator.sendBeacon && navigator.sendBeacon.bind(navigator);
if (!k || !nb) return;
var url = s.src.replace(/\/beacon\/v1\.js.*$/, '/api/beacon/') + encodeURIComponent(k);
var uad = navigator.userAgentData;
var dev = (uad && uad.mobile) || innerWidth < 768 ? 'phone' : 'desktop';
var here = function () { return location.pathname.slice(0, 300); };
var hard = here(), q = [];
var noq = function (u) { return /^https?:\/\//.test(u) ? String(u).split(/[?#]/)[0].slice(0, 300) : undefined; };
var cut = function (t) { return t ? String(t).slice(0, 200) : undefined; };
var inp;
var flush = function () {
  if (inp) { q.push(inp); inp = undefined; }
  // One beacon per page and navigation type, at most 10 figures each.
  while (q.length) {
    var first = q[0], same = [], rest = [];
    for (var i = 0; i < q.length; i++) {
      var x = q[i];
      (x.p === first.p && x.nt === first.nt && same.length < 10 ? same : rest).push(x);
    }
    q = rest;
    nb(url, JSON.stringify({ p: first.p, d: dev, nt: first.nt, m: same.map(function (x) { return x.m; }) }));
  }
};
var nt = function (n) { return ({ 'back-forward-cache': 'back-forward-cache', reload: 'reload', 'back-forward': 'back-forward', prerender: 'prerender', restore: 'restore' })[n] || 'navigate'; };
var fig = function (p, m, v) { return { p: p, nt: nt(v.navigationType), m: m }; };
var add = function (p, m, v) { q.push(fig(p, m, v)); };
var wv = webVitals, a = function (v) { return v.attribution || {}; };
// Where the page was when: INP and CLS are reported when the page hides, after any soft
// navigation, so each is filed under the path at its interaction or shift.
var paths = [[0, hard]];
var at = function (t) { var p = hard; paths.forEach(function (x) { if (x[0] <= t) p = x[1]; }); return p; };
// The targets of recent interactions, by time: web-vitals names the INP target from the event
// entries, which can come without one; the event itself has it.
var sel = function (n) {
  var out = [];
  for (; n && n.nodeType === 1 && out.length < 4; n = n.parentNode) {
    var s = n.nodeName.toLowerCase();
    if (n.id) { out.unshift(s + '#' + n.id); break; }
    if (typeof n.className === 'string' && n.className.trim()) s += '.' + n.className.trim().split(/\s+/).join('.');
    out.unshift(s);
  }
  return out.join('>');
};
var seen = [];
['pointerdown', 'keydown', 'click'].forEach(function (ty) {
  addEventListener(ty, function (e) { seen.push([e.timeStamp, e.target]); if (seen.length > 20) seen.shift(); }, { capture: true, passive: true });
});
var targetAt = function (t) {
  var best, d = 50;
  seen.forEach(function (x) { if (Math.abs(x[0] - t) <= d) { d = Math.abs(x[0] - t); best = x[1]; } });
  return best ? sel(best) : undefined;
};
wv.onTTFB(function (v) { add(hard, { n: 'ttfb', v: v.value }, v); });
wv.onFCP(function (v) { add(hard, { n: 'fcp', v: v.value }, v); });
wv.onLCP(function (v) { add(hard, { n: 'lcp', v: v.value, t: cut(a(v).target), u: noq(a(v).url) }, v); });
wv.onCLS(function (v) { add(at(a(v).largestShiftTime || 0), { n: 'cls', v: v.value, t: cut(a(v).largestShiftTarget) }, v); });
// INP with every change: web-vitals reads an interaction's entries in an idle callback, or when
// the page hides if no idle moment came first (a busy app, a visitor who leaves at once), and
// then after its own report for the hide, which has nothing yet: reported only then, that INP
// was lost. The latest waits here and goes with the next flush, once; a later change, later.
wv.onINP(function (v) {
  var att = a(v), ev = att.interactionType, longest = -1, t0 = att.interactionTime || 0;
  (att.processedEventEntries || []).forEach(function (e) {
    var d = e.processingEnd - e.processingStart;
    if (d > longest) { longest = d; ev = e.name; }
  });
  inp = fig(at(t0), { n: 'inp', v: v.value, t: cut(att.interactionTarget || targetAt(t0)), e: ev, i: att.inputDelay, r: att.processingDuration, s: att.presentationDelay }, v);
}, { reportAllChanges: true });
// In the bubble phase, so after web-vitals' own listeners (capture) have reported for the hide.
addEventListener('visibilitychange', function () { if (document.visibilityState === 'hidden') flush(); });
addEventListener('pagehide', flush);
// Soft navigations: web-vitals 5 does not report them, so a change of path by the History API
// counts as a page view of its own ("soft"); figures queued for the page before go first.
var last = hard;
var moved = function () {
  var p = here();
  if (p === last) return;
  flush();
  last = p;
  paths.push([performance.now(), p]);
  q.push({ p: p, nt: 'soft', m: { n: 'nav' } });
  flush();
};
['pushState', 'replaceState'].forEach(function (f) {
  var orig = history[f];
  history[f] = function () { var r = orig.apply(this, arguments); moved(); return r; };
});
addEventListener('popstate', moved);
