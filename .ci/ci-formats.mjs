// The budget check's CI formats read by real consumers (issue 35): the GitHub-flavoured
// Markdown rendered by marked (GFM on, as GitHub renders job summaries and PR comments), and
// the JUnit XML read by test-results-parser (the parser of testbeats' reports) and junit2json.
//
// It reads the golden files the handlers write for a hostile site (testdata/golden/ci, made by
// TestVerdictMarkdown and TestVerdictJUnit from real Lighthouse results through ci.Markdown and
// ci.JUnit, the functions the endpoint answers with; those tests fail when the code's output
// drifts from them), and checks: the table is a table, row by row and cell by cell; no string
// the site gave became HTML, a link, emphasis or an image; each budget is one test case,
// failed with its measured value, skipped when not measured.
//
//   npm install --prefix "$HOME/.sitepulse/ci-formats" --no-save marked@18.2.1 test-results-parser@0.4.6 junit2json@4.0.0
//   node .ci/ci-formats.mjs     # CI_FORMATS_MODULES=<dir>/node_modules elsewhere
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const modules = process.env.CI_FORMATS_MODULES || join(process.env.HOME || '', '.sitepulse/ci-formats/node_modules');
const require = createRequire(join(modules, 'noop.js'));
const { marked } = require('marked');
const { parse: parseResults } = require('test-results-parser');
const { parse: junit2json } = require('junit2json');

const mdPath = join(root, 'testdata/golden/ci/verdict.md');
const xmlPath = join(root, 'testdata/golden/ci/verdict.junit.xml');

// The hostile strings, read from the Go test that wrote the goldens, so both say the same.
const goTest = readFileSync(join(root, 'handlers/ci/verdict_test.go'), 'utf8');
const goString = (name) => {
  const raw = goTest.match(new RegExp(name + '\\s*=\\s*`([^`]*)`'));
  if (raw) return raw[1];
  return JSON.parse(goTest.match(new RegExp(name + '\\s*=\\s*("(?:[^"\\\\]|\\\\.)*")'))[1]);
};
const hostileName = goString('hostileName');
const hostilePath = goString('hostilePath');
const hostileBy = goString('hostileBy');

let passed = 0, failed = 0;
const check = (name, ok, detail = '') => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ' — ' + detail : ''}`);
};

// text is what a reader sees of rendered HTML: tags dropped, entities decoded.
const text = (html) => html.replace(/<[^>]*>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
  .replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&').trim();

// ---- Markdown ----
const md = readFileSync(mdPath, 'utf8');
marked.setOptions({ gfm: true });
const tokens = marked.lexer(md);
const all = [];
const walk = (list) => { for (const t of list || []) { all.push(t); walk(t.tokens); if (t.type === 'table') { for (const c of t.header) walk(c.tokens); for (const r of t.rows) for (const c of r) walk(c.tokens); } if (t.items) walk(t.items); } };
walk(tokens);
const html = marked.parse(md);

const table = tokens.find((t) => t.type === 'table');
check('marked reads one GFM table', tokens.filter((t) => t.type === 'table').length === 1);
if (table) {
  const header = table.header.map((c) => c.text);
  check('the table\'s header is Metric, Measured, Budget, Result', JSON.stringify(header) === JSON.stringify(['Metric', 'Measured', 'Budget', 'Result']), JSON.stringify(header));
  check('every row has four cells', table.rows.every((r) => r.length === 4), `${table.rows.length} rows`);
  const first = table.rows.map((r) => text(marked.parseInline(r[0].text)));
  check('the rows are the five scores, then each other budget and rule',
    JSON.stringify(first.slice(0, 5)) === JSON.stringify(['Health', 'Performance', 'SEO', 'Accessibility', 'Best practices']) && table.rows.length === 9,
    JSON.stringify(first));
  const lcp = table.rows.find((r) => r[0].text.startsWith('LCP'));
  check('a hostile page path in a cell reads as written, the cell intact',
    lcp && text(marked.parseInline(lcp[0].text)) === `LCP, mobile, worst page ${hostilePath}` && text(marked.parseInline(lcp[1].text)) === '4.6 s',
    lcp && text(marked.parseInline(lcp[0].text)));
  const results = table.rows.map((r) => text(marked.parseInline(r[3].text)));
  check('results: broken ❌, held ✅, unmeasured "not checked"', results.filter((x) => x === '❌').length === 4 && results.includes('✅') && results.includes('➖ not checked'), JSON.stringify(results));
}
const heading = tokens.find((t) => t.type === 'heading');
check('the heading shows the hostile site name as text', heading && text(marked.parseInline(heading.text)) === `❌ SitePulse: ${hostileName} breaks 4 budgets`, heading && text(marked.parseInline(heading.text)));
check('who published shows as text', text(html).includes(`published by ${hostileBy}`));
check('no raw HTML token anywhere', !all.some((t) => t.type === 'html'), all.filter((t) => t.type === 'html').map((t) => t.raw).join(' '));
const links = all.filter((t) => t.type === 'link');
check('the only links are the scan\'s', links.length === 2 && links.every((l) => l.href.startsWith('https://sitepulse.example.com/sites/')), links.map((l) => l.href).join(' '));
check('no image, strikethrough or code from the site', !all.some((t) => t.type === 'image' || t.type === 'del' || (t.type === 'codespan' && t.text !== '1a2b3c4')));
const strong = all.filter((t) => t.type === 'strong').map((t) => t.text);
check('bold only for metric names, never the site\'s "**Shop**"', strong.length > 0 && !strong.some((s) => s.includes('Shop')), JSON.stringify(strong.slice(0, 3)));
check('the rendered HTML has no <img>, <script> or <b> element', !/<(img|script|b)[\s>]/i.test(html));
check('the sections are there: budgets broken, regressions since the previous scan, the link', ['Budgets broken', '7 regressions since the previous scan', 'Open the scan in SitePulse'].every((s) => text(html).includes(s)));

// ---- JUnit ----
const result = parseResults({ type: 'junit', files: [xmlPath] });
const suite = result.suites[0];
check('test-results-parser reads one suite named for the site', result.suites.length === 1 && suite.name === `SitePulse budgets: ${hostileName}`, suite && suite.name);
const status = Object.fromEntries(suite.cases.map((c) => [c.name, c.status]));
check('one test case per budget and rule, each with its outcome', JSON.stringify(status) === JSON.stringify({
  'Performance ≥ 80': 'FAIL', 'SEO ≥ 50': 'PASS', 'Accessibility (desktop) ≥ 95': 'FAIL', 'LCP ≤ 2.5 s': 'FAIL', 'INP ≤ 200 ms': 'SKIP', 'TBT ≤ 600 ms (alert rule)': 'FAIL',
}), JSON.stringify(status));
check('totals: 4 failed, 1 passed, 1 skipped', result.failed === 4 && result.passed === 1 && result.skipped === 1 && result.errors === 0,
  `failed ${result.failed}, passed ${result.passed}, skipped ${result.skipped}, errors ${result.errors}`);
const lcpCase = suite.cases.find((c) => c.name === 'LCP ≤ 2.5 s');
check('a failure says the measured value, on the hostile page as written', lcpCase && lcpCase.failure === `LCP 4.6 s on ${hostilePath} (mobile), over the maximum of 2.5 s`, lcpCase && lcpCase.failure);
check('its body has the exact numbers', lcpCase && /\nactual: 4621(\.\d+)?\n/.test(lcpCase.stack_trace) && lcpCase.stack_trace.includes('threshold: 2500'), lcpCase && JSON.stringify(lcpCase.stack_trace));
check('the suite\'s properties carry the site and the scan', suite.metadata.site === hostileName && suite.metadata.publishedBy === hostileBy && suite.metadata.commit === '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b',
  JSON.stringify(suite.metadata).slice(0, 120));
const j = await junit2json(readFileSync(xmlPath, 'utf8'));
check('junit2json reads the same counts', j.tests === 6 && j.failures === 4 && j.skipped === 1 && j.testsuite[0].testcase.length === 6,
  `tests ${j.tests}, failures ${j.failures}, skipped ${j.skipped}`);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
