// What Lighthouse CI's own diff (packages/utils/src/audit-diff-finder.js of GoogleChrome/lighthouse-ci)
// names between two reports, the way its server's compare view computes it (lhr-comparison.jsx:
// every audit of every category, findAuditDiffs with synthesizeItemKeyDiffs and the view's default
// 5% threshold, audits ordered by their worst diff's severity). Not needed by go test: it made
// testdata/why/lhci/*.lhci-diff.json.
//
// usage: node .ci/lhci-diff.js LHCI_CHECKOUT BASE_LHR COMPARE_LHR > diff.json
//   LHCI_CHECKOUT: a checkout of GoogleChrome/lighthouse-ci (its packages/utils/src is required as is)
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const [checkout, basePath, comparePath] = process.argv.slice(2);
const finder = require(path.resolve(checkout, 'packages/utils/src/audit-diff-finder.js'));
const {getGroupForAuditId} = require(path.resolve(checkout, 'packages/utils/src/seed-data/lhr-generator.js'));

const read = p => {
  let b = fs.readFileSync(p);
  if (p.endsWith('.gz')) b = zlib.gunzipSync(b);
  return JSON.parse(b.toString('utf8'));
};
const base = read(basePath);
const compare = read(comparePath);
const options = {percentAbsoluteDeltaThreshold: 0.05, synthesizeItemKeyDiffs: true};
const itemsOf = audit => (audit && audit.details && audit.details.type !== 'debugdata' && audit.details.items) || [];
const keyOf = item => {
  const key = item.url || item.source?.url || item.label || item.groupLabel || item.entity?.text || item.entity ||
    item.node?.selector || item.node?.path || item.origin || '';
  return typeof key === 'string' ? finder.replaceNondeterministicStrings(key) : JSON.stringify(key);
};

const metrics = [];
const audits = [];
const seen = new Set();
for (const [categoryId, category] of Object.entries(compare.categories)) {
  for (const ref of category.auditRefs) {
    if (seen.has(ref.id)) continue;
    seen.add(ref.id);
    const audit = {...compare.audits[ref.id], id: ref.id};
    const baseAudit = base.audits[ref.id] && {...base.audits[ref.id], id: ref.id};
    if (!baseAudit) continue;
    const diffs = finder.findAuditDiffs(baseAudit, audit, options);
    if (!diffs.length) continue;
    const maxSeverity = Math.max(...diffs.map(finder.getDiffSeverity), 0);
    const bItems = itemsOf(baseAudit);
    const cItems = itemsOf(audit);
    const numeric = diffs.find(d => d.type === 'numericValue');
    const entry = {
      audit: ref.id, category: categoryId, group: ref.group || getGroupForAuditId(ref.id), maxSeverity,
      score: diffs.find(d => d.type === 'score') ? [baseAudit.score, audit.score] : undefined,
      numericValue: numeric ? [numeric.baseValue, numeric.compareValue] : undefined,
      added: diffs.filter(d => d.type === 'itemAddition').map(d => keyOf(cItems[d.compareItemIndex])),
      removed: diffs.filter(d => d.type === 'itemRemoval').map(d => keyOf(bItems[d.baseItemIndex])),
      worse: diffs
        .filter(d => d.type === 'itemDelta' && typeof d.baseItemIndex === 'number' && typeof d.compareItemIndex === 'number' &&
          finder.getDeltaStats(d).delta > 0)
        .sort((x, y) => finder.getDiffSeverity(y) - finder.getDiffSeverity(x))
        .slice(0, 5)
        .map(d => ({item: keyOf(cItems[d.compareItemIndex]), key: d.itemKey, base: d.baseValue, compare: d.compareValue})),
    };
    if (ref.group === 'metrics' && numeric) metrics.push({audit: ref.id, base: numeric.baseValue, compare: numeric.compareValue});
    audits.push(entry);
  }
}
audits.sort((a, b) => b.maxSeverity - a.maxSeverity);
process.stdout.write(JSON.stringify({
  tool: 'lighthouse-ci packages/utils/src/audit-diff-finder.js findAuditDiffs, threshold 5%, synthesizeItemKeyDiffs',
  base: path.basename(basePath), compare: path.basename(comparePath),
  lighthouseVersion: [base.lighthouseVersion, compare.lighthouseVersion],
  metrics, audits,
}, null, 1) + '\n');
