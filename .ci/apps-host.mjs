#!/usr/bin/env node
// MCP Apps and tasks against a running SitePulse, with the real host side: a test host page in
// headless Chromium embeds @modelcontextprotocol/ext-apps 2.0.4's AppBridge (what chat clients
// embed), fetches each ui:// view with @modelcontextprotocol/client 2.4.0, renders it in a
// sandboxed iframe and hands it a real tool result: the demo data and edge data (a site with no
// scan, a scan whose pages all failed, a site named with <script> and <img onerror>). It checks
// no console error, no network request from the view, and that the hostile name shows as text
// and never runs; screenshots at 360 and 800 px, light and dark. The tools' and resources'
// _meta are validated with the package's schema.json. Then the scan loop: start_scan as a task
// (client 2.4.0 declaring io.modelcontextprotocol/tasks) to completed with get_latest_scan's
// result, a second call answering the same scan, tasks/cancel; every task shape validated with the
// extension's own schema.json (modelcontextprotocol/ext-tasks); the tasks methods refused (-32021)
// to a client that does not declare the extension; a read-only API key made in Settings gets the
// 403 step-up challenge for start_scan and tasks/cancel; the account's daily audit quota, used
// up on a second service, is a tool error that says when to retry; and without the extension
// through get_scan. See .ci/README.md ("MCP Apps and tasks").
//
// Env: BASE_URL (http://127.0.0.1:PORT), API_KEY, LOGIN_EMAIL, LOGIN_PASSWORD (the demo login,
// for the edge sites and the read-only key), INTEROP_DIR (default /tmp/interop-apps, with esbuild
// installed), TASKS_SCHEMA (ext-tasks' schema/draft/schema.json, default
// $INTEROP_DIR/ext-tasks-schema.json), QUOTA_BASE_URL and QUOTA_API_KEY (a second service started
// with USER_DAILY_AUDITS=1; its demo key), SHOTS (screenshot directory, default
// /tmp/sitepulse-apps-shots), CHROMIUM (default /usr/bin/chromium).
// Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on a failure.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const kit = process.env.INTEROP_DIR ?? '/tmp/interop-apps';
const require = createRequire(join(kit, 'package.json'));
const v2 = require('@modelcontextprotocol/client');
const { chromium } = require('playwright-core');
const Ajv2020 = require('ajv/dist/2020').default;

const base = (process.env.BASE_URL ?? '').replace(/\/$/, '');
const apiKey = process.env.API_KEY ?? '';
if (!/^http:\/\/127\.0\.0\.1(:\d+)?$/.test(base) || !apiKey) {
  console.error('BASE_URL (http://127.0.0.1:PORT) and API_KEY are required');
  process.exit(2);
}
const shots = process.env.SHOTS ?? '/tmp/sitepulse-apps-shots';
mkdirSync(shots, { recursive: true });

let passed = 0, failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}
async function step(name, fn) {
  try {
    const detail = await fn();
    check(name, true, typeof detail === 'string' ? detail : '');
  } catch (e) {
    check(name, false, e?.message ?? String(e));
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
const tick = (ms) => new Promise((r) => setTimeout(r, ms)); // polling pace of a client, not a test wait

// --- the MCP client: 2.4.0 at 2026-07-28, optionally declaring the tasks extension ------------
// Client 2.4.0 sends the extension in every request's clientCapabilities but has no runtime for
// it: its 2026-07-28 codec (decodeResult in client/dist/src-*.mjs) accepts resultType "complete"
// and "input_required" only and answers any other, "task" included, with SdkError
// UNSUPPORTED_RESULT_TYPE before the result reaches the caller (typescript-sdk issue #2637, open;
// the client side of the extension is draft PR #2782, "ext/tasks"). So tap keeps the last raw
// answer of the client's own transport and the CreateTaskResult is read from it; tasks/get,
// tasks/update and tasks/cancel go through client.request with a schema, the SDK's door for the
// methods SEP-2663 re-defines (isExtensionReusedRequestMethod).
const anySchema = { '~standard': { version: 1, vendor: 'ci', validate: (value) => ({ value }) } };
async function connect(tasks, key = apiKey, url = base) {
  const tap = { last: null };
  const fetchTap = async (url, init) => {
    const res = await fetch(url, init);
    tap.lastStatus = res.status;
    tap.lastChallenge = res.headers.get('www-authenticate');
    try { tap.last = JSON.parse(await res.clone().text()); } catch { tap.last = null; }
    return res;
  };
  const transport = new v2.StreamableHTTPClientTransport(new URL(`${url}/api/mcp`),
    { fetch: fetchTap, requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  // A host that draws views declares the ui extension (2026-07-28 results carry the views' data
  // only for such a client); the task client declares the tasks extension too.
  const extensions = { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } };
  if (tasks) extensions['io.modelcontextprotocol/tasks'] = {};
  const capabilities = { extensions };
  const client = new v2.Client({ name: 'sitepulse-apps-ci', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport);
  const call = async (name, args) => {
    try {
      return await client.callTool({ name, arguments: args });
    } catch (e) {
      if (e?.code === 'UNSUPPORTED_RESULT_TYPE' && tap.last?.result?.resultType === 'task') return tap.last.result;
      throw e;
    }
  };
  const task = (method, taskId, extra = {}) => client.request({ method, params: { taskId, ...extra } }, anySchema);
  return { client, call, task, tap };
}

// --- edge data through the web UI --------------------------------------------------------------
async function webSession(base, email = process.env.LOGIN_EMAIL, password = process.env.LOGIN_PASSWORD) {
  assert(email && password, 'LOGIN_EMAIL and LOGIN_PASSWORD are required for the edge sites');
  let cookie = '';
  const jar = (res) => { for (const c of res.headers.getSetCookie?.() ?? []) cookie = [cookie, c.split(';')[0]].filter(Boolean).join('; '); };
  const csrfOf = async (path) => {
    const res = await fetch(base + path, { headers: { cookie }, redirect: 'manual' });
    jar(res);
    return (await res.text()).match(/name="csrf_token" value="([^"]+)"/)?.[1] ?? '';
  };
  const post = async (path, form) => {
    const res = await fetch(base + path, { method: 'POST', redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base }, body: new URLSearchParams(form).toString() });
    jar(res);
    return res;
  };
  const res = await post('/login', { email, password, csrf_token: await csrfOf('/login') });
  assert(res.status === 303 || res.status === 302, `login answered ${res.status}`);
  const add = async (name, domain, pages) => {
    const r = await post('/sites', { name, domain, pages, schedule: 'off', csrf_token: await csrfOf('/sites/new') });
    const id = r.headers.get('location')?.match(/\/sites\/([0-9a-f-]{36})/)?.[1];
    assert(id, `creating ${name} answered ${r.status}`);
    return id;
  };
  // key makes an API key in Settings; publish unticked, it is read-only (mcp:read). The form
  // answers 303 (POST-redirect-GET) and the page it leads to shows the key once.
  const key = async (name, publish) => {
    const form = { name, csrf_token: await csrfOf('/settings') };
    if (publish) form.publish = 'on';
    const r = await post('/settings/api-keys', form);
    const to = r.headers.get('location');
    assert(r.status === 303 && to, `creating key ${name} answered ${r.status}`);
    const shown = await fetch(new URL(to, base), { headers: { cookie }, redirect: 'manual' });
    jar(shown);
    const k = (await shown.text()).match(/svc_[A-Za-z0-9_-]{20,}/)?.[0];
    assert(k, `the page after creating key ${name} (${to}) shows no key`);
    return k;
  };
  return { add, key };
}

// waitScan follows a scan with get_scan until it is no longer queued or running.
async function waitScan(call, scanId) {
  for (let i = 0; i < 120; i++) {
    const s = (await call('get_scan', { scanId })).structuredContent;
    if (s.status !== 'queued' && s.status !== 'running') return s;
    await tick(500);
  }
  throw new Error(`scan ${scanId} did not finish in 60 s`);
}

// --- the host page ------------------------------------------------------------------------------
// The AppBridge bundle: ext-apps' app-bridge export with its dependencies, bundled by esbuild
// from the kit (the package ships ESM with bare imports, which a page cannot load as they are).
function bridgeBundle() {
  const out = join(kit, 'bridge.bundle.js');
  if (!existsSync(out)) {
    writeFileSync(join(kit, 'bridge-entry.mjs'), "export { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';\n");
    execFileSync(join(kit, 'node_modules/.bin/esbuild'), ['--bundle', '--format=esm', '--platform=browser', `--outfile=${out}`,
      '--log-level=warning', join(kit, 'bridge-entry.mjs')], { cwd: kit });
  }
  return readFileSync(out);
}
const hostPage = `<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;width:100%;display:block}</style></head>
<body><script type="module">
import { AppBridge, PostMessageTransport } from '/bridge.js';
window.pwned = [];
window.addEventListener('message', (e) => { if (typeof e.data === 'string' && e.data.startsWith('pwned')) window.pwned.push(e.data); });
// show renders one view in a sandboxed iframe (scripts only: an opaque origin, no same-origin
// access, no forms, no popups) and hands it the tool result once it has initialized.
window.show = async (html, result, theme) => {
  document.body.querySelectorAll('iframe').forEach((f) => f.remove());
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.height = '40px';
  document.body.appendChild(iframe);
  const bridge = new AppBridge(null, { name: 'sitepulse-ci-host', version: '1.0.0' }, {},
    { hostContext: { theme, locale: 'de-DE', displayMode: 'inline', platform: 'web' } });
  window.sized = 0;
  bridge.onsizechange = ({ height }) => { if (height) { iframe.style.height = height + 'px'; window.sized++; } };
  const ready = new Promise((r) => { bridge.oninitialized = r; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await ready;
  await bridge.sendToolResult(result);
  return true;
};
window.hostReady = true;
</script></body></html>`;

async function hostServer() {
  const bundle = bridgeBundle();
  const srv = createServer((req, res) => {
    if (req.url === '/') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(hostPage); return; }
    if (req.url === '/favicon.ico') { res.writeHead(204); res.end(); return; }
    if (req.url === '/bridge.js') { res.writeHead(200, { 'content-type': 'text/javascript' }); res.end(bundle); return; }
    res.writeHead(404); res.end();
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, url: `http://127.0.0.1:${srv.address().port}` };
}

// --- run -----------------------------------------------------------------------------------------
const modern = await connect(true);
const plain = await connect(false);
const sites = (await plain.call('list_sites', {})).structuredContent.sites;
const demo = sites.find((s) => s.name === 'Demo Site') ?? sites[0];

// The package's own schema validates the _meta of the tools and of the resources.
const schema = JSON.parse(readFileSync(join(kit, 'node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false });
ajv.addSchema(schema);
const validator = (def) => ajv.getSchema(`${schema.$id}#/$defs/${def}`) ?? ajv.compile({ $ref: `${schema.$id}#/$defs/${def}` });
const views = {};
await step('tools: _meta.ui of get_latest_scan, get_trend, get_regression_report, compare_scans valid per schema.json (McpUiToolMeta)', async () => {
  const tools = (await plain.client.listTools()).tools;
  const validate = validator('McpUiToolMeta');
  const linked = tools.filter((t) => t._meta?.ui);
  for (const t of linked) {
    assert(validate(t._meta.ui), `${t.name}: ${ajv.errorsText(validate.errors)}`);
    views[t.name] = t._meta.ui.resourceUri;
  }
  assert(linked.map((t) => t.name).sort().join() === 'compare_scans,get_latest_scan,get_regression_report,get_trend', `linked: ${linked.map((t) => t.name)}`);
  return Object.values(views).join(', ');
});
const html = {};
await step('resources: list and read each view, mimeType text/html;profile=mcp-app, _meta.ui valid (McpUiResourceMeta), csp empty', async () => {
  const validate = validator('McpUiResourceMeta');
  const listed = (await plain.client.listResources()).resources;
  for (const r of listed) assert(validate(r._meta?.ui), `${r.uri} (list): ${ajv.errorsText(validate.errors)}`);
  for (const uri of Object.values(views)) {
    assert(listed.some((r) => r.uri === uri), `${uri} not listed`);
    const c = (await plain.client.readResource({ uri })).contents[0];
    assert(c.mimeType === 'text/html;profile=mcp-app', `${uri}: ${c.mimeType}`);
    assert(validate(c._meta?.ui), `${uri}: ${ajv.errorsText(validate.errors)}`);
    assert(Object.keys(c._meta.ui.csp ?? {}).length === 0, `${uri}: csp ${JSON.stringify(c._meta.ui.csp)}`);
    html[uri] = c.text;
  }
  return `${listed.length} views, ${Object.values(html).map((h) => h.length).join('/')} bytes`;
});
await step('resources/read of an unknown ui:// uri is an error', async () => {
  try { await plain.client.readResource({ uri: 'ui://sitepulse/nope' }); } catch (e) { return `code ${e.code}`; }
  throw new Error('no error');
});

// Edge sites: none scanned; one whose every page fails; one named with markup, a page failing.
const web = await webSession(base);
// At most 100 characters (MAX site name): an <img onerror> and a <script>, each posting to the host.
const hostile = `<img src=x onerror=parent.postMessage('pwned1','*')><script>parent.postMessage('pwned2')</script>`;
const edge = {}, run = Date.now().toString(36); // fresh domains: a domain is one site

await step('edge sites: created, and scanned with start_scan + get_scan (no tasks extension)', async () => {
  edge.never = await web.add('Edge: never scanned', `never-${run}.example`, '/');
  edge.failing = await web.add('Edge: every page fails', `failing-${run}.example`, '/broken\n/a/broken');
  edge.hostile = await web.add(hostile, `hostile-${run}.example`, '/\n/broken');
  // A page the PSI double answers fast once, then slow: its second scan's regression is
  // confirmed by the re-audits (REGRESSION_CONFIRM_RUNS, 2 by default).
  edge.slower = await web.add('Edge: slower', `slower-${run}.example`, '/slower');
  const out = [];
  for (const [id, args] of [[edge.failing, {}], [edge.hostile, {}], [edge.slower, { strategy: 'mobile' }], [edge.slower, { strategy: 'mobile' }]]) {
    const started = (await plain.call('start_scan', { siteId: id, ...args })).structuredContent;
    assert(started.status === 'queued' || started.status === 'running', `start_scan: ${JSON.stringify(started)}`);
    const done = await waitScan(plain.call, started.scanId);
    out.push(`${done.status} ${done.pagesDone}/${done.pagesTotal}${done.reason ? ` (${done.reason.slice(0, 60)})` : ''}`);
  }
  return out.join('; ');
});

const cases = [
  ['latest-demo', 'get_latest_scan', demo.id], ['trend-demo', 'get_trend', demo.id], ['regressions-demo', 'get_regression_report', demo.id],
  ['latest-never', 'get_latest_scan', edge.never], ['trend-never', 'get_trend', edge.never], ['regressions-never', 'get_regression_report', edge.never],
  ['latest-failing', 'get_latest_scan', edge.failing],
  ['latest-hostile', 'get_latest_scan', edge.hostile], ['trend-hostile', 'get_trend', edge.hostile], ['regressions-hostile', 'get_regression_report', edge.hostile],
  ['regressions-slower', 'get_regression_report', edge.slower],
];
// compare_scans (issue 33): the demo's two scans, all pages and the home page alone (its
// filmstrips drawn from the data: URIs of the result), the slower page's two scans, and the
// hostile site's one scan compared with itself. Its cases name their arguments.
const scansOf = async (siteId) => (await plain.call('get_trend', { siteId })).structuredContent.scans.map((x) => x.scanId);
const [demoFrom, demoTo] = await scansOf(demo.id), [slowFrom, slowTo] = await scansOf(edge.slower), [hostileScan] = await scansOf(edge.hostile);
cases.push(['compare-demo', 'compare_scans', { fromScanId: demoFrom, toScanId: demoTo }],
  ['compare-demo-home', 'compare_scans', { fromScanId: demoFrom, toScanId: demoTo, pagePath: '/', strategy: 'mobile' }],
  ['compare-slower', 'compare_scans', { fromScanId: slowFrom, toScanId: slowTo }],
  ['compare-hostile', 'compare_scans', { fromScanId: hostileScan, toScanId: hostileScan }]);
const { srv, url: hostURL } = await hostServer();
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  for (const [label, tool, siteId] of cases) {
    const result = await plain.call(tool, typeof siteId === 'object' ? siteId : { siteId });
    const view = html[views[tool]];
    for (const width of [360, 800]) {
      for (const theme of ['light', 'dark']) {
        await step(`view ${label} at ${width} px, ${theme}: renders, no console error, no request, nothing runs`, async () => {
          const page = await browser.newPage({ viewport: { width, height: 600 }, colorScheme: theme });
          const errors = [], requests = [];
          page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
          page.on('pageerror', (e) => errors.push(e.message));
          page.on('request', (r) => { if (!r.url().startsWith(hostURL)) requests.push(r.url()); });
          await page.goto(hostURL);
          await page.waitForFunction(() => window.hostReady === true);
          await page.evaluate(([h, r, t]) => window.show(h, r, t), [view, result, theme]);
          const frame = page.frames().find((f) => f !== page.mainFrame());
          await frame.waitForFunction(() => !document.getElementById('app').textContent.startsWith('Waiting'));
          // The host sized the iframe to the view's own height (ui/notifications/size-changed).
          const height = await frame.evaluate(() => Math.ceil(document.documentElement.getBoundingClientRect().height));
          await page.waitForFunction((h) => document.querySelector('iframe').style.height === `${h}px`, height);
          await frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
          const text = await frame.evaluate(() => document.getElementById('app').innerText);
          const pwned = await page.evaluate(() => window.pwned);
          const doc = await frame.evaluate(() => ({ theme: document.documentElement.getAttribute('data-theme'), imgs: document.images.length, scripts: document.querySelectorAll('#app script').length,
            dataImgs: [...document.images].filter((i) => /^data:image\/(jpeg|png|webp);base64,/.test(i.getAttribute('src')) && i.complete && i.naturalWidth > 0).length,
            marks: document.querySelectorAll('svg.trend g.publish').length }));
          const file = join(shots, `${label}-${width}-${theme}.png`);
          await page.setViewportSize({ width, height: Math.max(200, height) }); // the whole view in the viewport: Chromium paints an out-of-process iframe only there
          await frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
          await page.screenshot({ path: file });
          await page.close();
          assert(errors.length === 0, `console errors: ${errors.join(' | ')}`);
          assert(requests.length === 0, `requests: ${requests.join(', ')}`);
          // Only the compare view draws pictures: the result's own data: URIs, each decoded.
          const pictures = tool === 'compare_scans' ? doc.dataImgs : 0;
          assert(pwned.length === 0 && doc.imgs === pictures && doc.scripts === 0, `markup ran: ${pwned} imgs ${doc.imgs} (${pictures} of the result's pictures)`);
          if (label.startsWith('compare-demo')) assert(doc.imgs > 0 && text.includes('widgetly.test'), `the demo comparison draws ${doc.imgs} pictures; cause named: ${text.includes('widgetly.test')}`);
          // Each cause says how sure it is (issue 42): a tag per cause sentence.
          if (label.startsWith('compare-demo')) {
            const tags = await frame.evaluate(() => [document.querySelectorAll('ul.causes li').length, document.querySelectorAll('ul.causes li .conf').length]);
            assert(tags[0] > 0 && tags[0] === tags[1] && text.includes('high confidence'), `${tags[1]} of ${tags[0]} causes say how sure they are`);
          }
          if (label === 'regressions-demo') assert(/(high|medium|low) confidence/.test(text), 'the regressions do not say how sure their causes are');
          assert(doc.theme === theme, `theme ${doc.theme}`);
          if (label.endsWith('hostile') && tool === 'get_latest_scan') assert(text.includes('<script>'), 'the hostile name is not shown as text');
          // Confirmation per regression: the demo's seeded regressions were seen once, the slower page's confirmed.
          if (label === 'regressions-demo') assert(text.includes('not confirmed · 1 run') && !/\bconfirmed · median/.test(text), 'the demo regressions are not shown unconfirmed');
          if (label === 'regressions-slower') assert(text.includes('confirmed · median of 3 runs'), 'the slower page regression is not shown confirmed after 3 runs');
          if (label === 'trend-demo') assert(doc.marks > 0 && doc.marks === result.structuredContent.publishes.length, `${doc.marks} publish marks for ${result.structuredContent.publishes.length} publishes`);
          return `${height} px high: ${text.replace(/\s+/g, ' ').slice(0, 60)}…`;
        });
      }
    }
  }
} finally {
  await browser.close();
  srv.close();
}

// --- the scan loop ------------------------------------------------------------------------------
// Every task shape is checked against the extension's own schema (ext-tasks schema/draft/schema.json).
const tasksSchemaFile = process.env.TASKS_SCHEMA ?? join(kit, 'ext-tasks-schema.json');
const tasksAjv = new Ajv2020({ strict: false, validateFormats: false }); // shapes, not uri formats
let taskShape = () => { throw new Error(`no ext-tasks schema at ${tasksSchemaFile} (TASKS_SCHEMA)`); };
if (existsSync(tasksSchemaFile)) {
  const ts = JSON.parse(readFileSync(tasksSchemaFile, 'utf8'));
  tasksAjv.addSchema(ts);
  taskShape = (def, value) => {
    const v = tasksAjv.getSchema(`${ts.$id}#/$defs/${def}`);
    assert(v(value), `${def}: ${tasksAjv.errorsText(v.errors)} in ${JSON.stringify(value).slice(0, 200)}`);
  };
}
const shapes = new Set();
// checked validates the answer as it came over the wire (the client strips resultType from what
// it hands back), and returns what the client handed back.
const checked = (def, value) => {
  const wire = modern.tap.last?.result;
  assert(wire && (wire.taskId ?? null) === (value.taskId ?? null), `no wire answer for ${def}`);
  taskShape(def, wire);
  shapes.add(def + (wire.status ? ` (${wire.status})` : ''));
  return value;
};

await step('tasks: start_scan on the demo site is a task (resultType task, taskId = scanId, ttlMs null)', async () => {
  const t = checked('CreateTaskResult', await modern.call('start_scan', { siteId: demo.id }));
  assert(t.resultType === 'task' && t.status === 'working' && t.ttlMs === null && t.pollIntervalMs > 0, JSON.stringify(t));
  const again = checked('CreateTaskResult', await modern.call('start_scan', { siteId: demo.id }));
  assert(again.taskId === t.taskId, `second call: ${again.taskId}, want ${t.taskId}`);
  const seen = new Set();
  let got;
  for (let i = 0; i < 120; i++) {
    got = checked('GetTaskResult', await modern.task('tasks/get', t.taskId));
    seen.add(got.statusMessage ?? got.status);
    if (got.status !== 'working') break;
    await tick(got.pollIntervalMs ?? 1000);
  }
  assert(got.status === 'completed', `ended ${got.status}: ${JSON.stringify(got).slice(0, 200)}`);
  const latest = await modern.call('get_latest_scan', { siteId: demo.id });
  assert(JSON.stringify(got.result.structuredContent) === JSON.stringify(latest.structuredContent), 'completed result differs from get_latest_scan');
  assert(JSON.stringify(got.result.content) === JSON.stringify(latest.content), 'text differs');
  return `a second call answered the same task; ${[...seen].slice(-3).join(' → ')}; completed = get_latest_scan (${latest.structuredContent.scanId})`;
});
await step('tasks: tasks/cancel stops a running scan; tasks/get says cancelled; tasks/update acknowledged; the site is free again', async () => {
  const t = checked('CreateTaskResult', await modern.call('start_scan', { siteId: demo.id }));
  assert(t.resultType === 'task', JSON.stringify(t));
  checked('UpdateTaskResult', await modern.task('tasks/update', t.taskId, { inputResponses: {} }));
  const ack = checked('CancelTaskResult', await modern.task('tasks/cancel', t.taskId));
  assert(!('taskId' in ack) && !('status' in ack), `cancel ack carries a task: ${JSON.stringify(ack)}`);
  const got = checked('GetTaskResult', await modern.task('tasks/get', t.taskId));
  assert(got.status === 'cancelled', `status ${got.status}`);
  const s = (await plain.call('get_scan', { scanId: t.taskId })).structuredContent;
  assert(s.status === 'failed', `scan ${s.status}`);
  checked('CancelTaskResult', await modern.task('tasks/cancel', t.taskId)); // a terminal task: the same ack
  const next = await modern.call('start_scan', { siteId: demo.id });
  assert(next.taskId !== t.taskId, 'start_scan answered the cancelled scan');
  await modern.task('tasks/cancel', next.taskId);
  return `scan ${s.status}: ${s.reason}`;
});
await step('tasks: every task answer valid per ext-tasks schema.json', async () => {
  assert(shapes.size >= 5, `only ${[...shapes]}`);
  return [...shapes].join(', ');
});
await step('tasks/get of an unknown task is a JSON-RPC error', async () => {
  try { await modern.task('tasks/get', '00000000-0000-4000-8000-000000000000'); } catch (e) { return `code ${e.code}`; }
  throw new Error('no error');
});
await step('no extension: tasks/get, tasks/update, tasks/cancel are -32021 naming the extension', async () => {
  const out = [];
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    try {
      await plain.task(method, '00000000-0000-4000-8000-000000000000', method === 'tasks/update' ? { inputResponses: {} } : {});
      throw new Error(`${method} answered`);
    } catch (e) {
      assert(e.code === -32021 && e.data?.requiredCapabilities?.extensions?.['io.modelcontextprotocol/tasks'], `${method}: ${e.code} ${e.message}`);
      out.push(`${method} ${e.code}`);
    }
  }
  return out.join(', ');
});
await step('no extension: start_scan gives the scan at once, a second call the same scan, get_scan follows it to complete = get_latest_scan', async () => {
  const started = await plain.call('start_scan', { siteId: demo.id });
  assert(!started.resultType || started.resultType === 'complete', 'a task without the extension');
  const again = (await plain.call('start_scan', { siteId: demo.id })).structuredContent;
  assert(again.scanId === started.structuredContent.scanId && again.alreadyRunning, 'second call started another scan');
  const done = await waitScan(plain.call, started.structuredContent.scanId);
  const latest = (await plain.call('get_latest_scan', { siteId: demo.id })).structuredContent;
  assert(done.status === 'complete' && JSON.stringify(done.result) === JSON.stringify(latest), `get_scan ${done.status}`);
  return `complete ${done.pagesDone}/${done.pagesTotal}`;
});

// A read-only API key (Settings, "may publish reports and start scans" unticked: mcp:read): start_scan and
// tasks/cancel are 403 with the insufficient_scope challenge naming mcp:write, as the client sees it.
await step('read-only API key: start_scan and tasks/cancel get 403 insufficient_scope naming mcp:read mcp:write', async () => {
  const key = await web.key(`apps-ci read-only ${run}`, false);
  const ro = await connect(true, key);
  const out = [];
  for (const [what, fn] of [['start_scan', () => ro.call('start_scan', { siteId: demo.id })], ['tasks/cancel', () => ro.task('tasks/cancel', demo.id)]]) {
    let err;
    try { await fn(); } catch (e) { err = e; }
    const h = ro.tap.lastChallenge ?? '';
    assert(err && ro.tap.lastStatus === 403, `${what}: status ${ro.tap.lastStatus}, ${err ? err.message : 'no error'}`);
    assert(/error="insufficient_scope"/.test(h) && /scope="mcp:read mcp:write"/.test(h), `${what}: WWW-Authenticate ${h}`);
    out.push(`${what}: 403, client ${err.constructor.name} ${String(err.code ?? '')}`.trim());
  }
  const r = await ro.call('get_scan', { scanId: (await plain.call('get_latest_scan', { siteId: demo.id })).structuredContent.scanId });
  assert(!r.isError, 'the read-only key cannot read a scan');
  await ro.client.close();
  return out.join('; ');
});

// The account's daily audit quota: a second service started with USER_DAILY_AUDITS=1. Its demo
// workspace's first scan may run (the budget is checked before a scan, not inside it); after it
// start_scan is a tool error that says when to retry, task-declaring client or not.
await step('quota used up: start_scan is a tool error saying when to retry (a second service, USER_DAILY_AUDITS=1)', async () => {
  const qBase = (process.env.QUOTA_BASE_URL ?? '').replace(/\/$/, ''), qKey = process.env.QUOTA_API_KEY ?? '';
  assert(/^http:\/\/127\.0\.0\.1(:\d+)?$/.test(qBase) && qKey && process.env.QUOTA_LOGIN_PASSWORD, 'QUOTA_BASE_URL, QUOTA_API_KEY and QUOTA_LOGIN_PASSWORD are required');
  // A site of its own: the demo site's audits are replayed offline and count against no quota.
  const qweb = await webSession(qBase, process.env.LOGIN_EMAIL, process.env.QUOTA_LOGIN_PASSWORD);
  const siteId = await qweb.add('Quota site', `quota-${run}.example`, '/');
  const q = await connect(true, qKey, qBase);
  const qp = await connect(false, qKey, qBase);
  const first = await q.call('start_scan', { siteId, strategy: 'mobile' });
  assert(first.resultType === 'task', `the first scan: ${JSON.stringify(first).slice(0, 200)}`);
  const done = await waitScan(qp.call, first.taskId);
  const r = await q.call('start_scan', { siteId, strategy: 'mobile' });
  assert(r.isError && /Retry after/.test(r.content[0].text) && r.resultType !== 'task', `start_scan: ${JSON.stringify(r).slice(0, 300)}`);
  const again = await qp.call('start_scan', { siteId });
  assert(again.isError && again.content[0].text === r.content[0].text, 'without the extension: not the same tool error');
  await q.client.close(); await qp.client.close();
  return `first scan ${done.status} ${done.pagesDone}/${done.pagesTotal}; then: ${r.content[0].text}`;
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
