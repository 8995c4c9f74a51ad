#!/usr/bin/env node
// Real MCP clients against a running SitePulse: the official SDK 1.32.2 at each legacy protocol
// version (2025-03-26, 2025-06-18, 2025-11-25) and @modelcontextprotocol/client 2.4.0 with
// versionNegotiation 'auto' (must reach the modern era) and pinned to 2026-07-28. Each lists all
// tools and calls every one on the demo data and on edge data; the clients validate
// structuredContent against each tool's outputSchema themselves (a mismatch throws), and this
// script checks that structuredContent is the text block's JSON. See .ci/README.md.
//
// Env: BASE_URL (http://127.0.0.1:PORT), API_KEY (svc_...), INTEROP_DIR (the installed interop
// kit, default /tmp/interop), optional LOGIN_EMAIL/LOGIN_PASSWORD (the demo login: adds a site
// with no scan, and with EDGE_SCAN=1 scans a site whose pages PSI fails or answers without CrUX;
// see .ci/psi-stub.mjs). Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on a failure.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const kit = process.env.INTEROP_DIR ?? '/tmp/interop';
const require = createRequire(join(kit, 'package.json'));
const { Client: ClientV1 } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport: TransportV1 } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const v2 = require('@modelcontextprotocol/client');

const base = (process.env.BASE_URL ?? '').replace(/\/$/, '');
const apiKey = process.env.API_KEY ?? '';
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(base) || !apiKey) {
  console.error('BASE_URL (a loopback http://127.0.0.1:PORT) and API_KEY are required');
  process.exit(2);
}
const mcpUrl = new URL(`${base}/api/mcp`);
const TOOLS = ['list_sites', 'get_latest_scan', 'get_page_details', 'get_lcp_elements', 'get_third_party_scripts',
  'get_accessibility_issues', 'get_regression_report', 'get_trend', 'generate_client_report'];

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

// --- edge data through the web UI (optional) ---------------------------------------------------
async function webSession() {
  const email = process.env.LOGIN_EMAIL, password = process.env.LOGIN_PASSWORD;
  if (!email || !password) return null;
  let cookie = '';
  const jar = (res) => {
    for (const c of res.headers.getSetCookie?.() ?? []) cookie = [cookie, c.split(';')[0]].filter(Boolean).join('; ');
  };
  const csrfOf = async (path) => {
    const res = await fetch(base + path, { headers: { cookie }, redirect: 'manual' });
    jar(res);
    const html = await res.text();
    return html.match(/name="csrf_token" value="([^"]+)"/)?.[1] ?? '';
  };
  const post = async (path, form) => {
    const res = await fetch(base + path, { method: 'POST', redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base },
      body: new URLSearchParams(form).toString() });
    jar(res);
    return res;
  };
  let res = await post('/login', { email, password, csrf_token: await csrfOf('/login') });
  assert(res.status === 303 || res.status === 302, `login answered ${res.status}`);
  return { csrfOf, post };
}

async function makeEdgeSites(web) {
  const created = {};
  const add = async (name, domain, pages) => {
    const res = await web.post('/sites', { name, domain, pages, schedule: 'off', csrf_token: await web.csrfOf('/sites/new') });
    const id = res.headers.get('location')?.match(/\/sites\/([0-9a-f-]{36})/)?.[1];
    assert(id, `creating ${name} answered ${res.status}`);
    return id;
  };
  created.never = await add('Edge: never scanned', 'never-scanned.example', '/');
  if (process.env.EDGE_SCAN === '1') {
    created.scanned = await add('Edge: failing pages', process.env.EDGE_DOMAIN ?? 'edge.example', '/\n/no-crux\n/broken');
    const res = await web.post(`/sites/${created.scanned}/scan`, { csrf_token: await web.csrfOf(`/sites/${created.scanned}`) });
    assert(res.status < 400, `Scan now answered ${res.status}`);
  }
  return created;
}

// --- the clients -------------------------------------------------------------------------------
// wire is each client's fetch. For SDK 1.32.2 (which always offers 2025-11-25) it asks for an
// older version, as an older client would: the initialize request's protocolVersion is rewritten.
// With state.tamper set it adds a field the outputSchema does not declare to a result's
// structuredContent, to show that the client's own validation would catch one.
function wire(version, state) {
  return async (url, init) => {
    if (version && typeof init?.body === 'string' && init.body.includes('"method":"initialize"')) {
      const msg = JSON.parse(init.body);
      msg.params.protocolVersion = version;
      init = { ...init, body: JSON.stringify(msg) };
    }
    const res = await fetch(url, init);
    if (!state.tamper || !res.headers.get('content-type')?.includes('application/json')) return res;
    const body = await res.json();
    if (body?.result?.structuredContent) body.result.structuredContent.undeclaredField = true;
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(body), { status: res.status, headers });
  };
}

const auth = { headers: { Authorization: `Bearer ${apiKey}` } };
const clients = [
  ...['2025-03-26', '2025-06-18', '2025-11-25'].map((version) => ({
    label: `sdk 1.32.2 @ ${version}`, want: version,
    make: (state) => {
      const transport = new TransportV1(mcpUrl, { requestInit: auth, fetch: wire(version, state) });
      const client = new ClientV1({ name: 'sitepulse-ci', version: '1.0.0' }, { capabilities: {} });
      return { client, transport, negotiated: () => transport.protocolVersion, era: () => 'legacy' };
    },
  })),
  ...[['auto', 'auto'], ['pinned 2026-07-28', { pin: '2026-07-28' }]].map(([label, mode]) => ({
    label: `client 2.4.0 ${label}`, want: '2026-07-28',
    make: (state) => {
      const transport = new v2.StreamableHTTPClientTransport(mcpUrl, { requestInit: auth, fetch: wire(null, state) });
      const client = new v2.Client({ name: 'sitepulse-ci', version: '2.0.0' }, { capabilities: {}, versionNegotiation: { mode } });
      return { client, transport, negotiated: () => client.getNegotiatedProtocolVersion(), era: () => client.getProtocolEra() };
    },
  })),
];

async function run(spec, edge) {
  const state = { tamper: false };
  const { client, transport, negotiated, era } = spec.make(state);
  const L = spec.label;
  const errors = [];
  client.onerror = (e) => errors.push(e);
  await step(`${L}: connect reaches ${spec.want}`, async () => {
    await client.connect(transport);
    assert(negotiated() === spec.want, `negotiated ${negotiated()} (era ${era()})`);
    return `version ${negotiated()}, era ${era()}`;
  });
  const typed = spec.want >= '2025-06-18';
  let tools = [];
  // start_scan, get_scan and compare_scans are listed from 2025-06-18 on: a 2025-03-26 session
  // keeps the interface's nine tools byte for byte (.ci/apps-host.mjs exercises the three).
  const listed = typed ? [...TOOLS, 'start_scan', 'get_scan', 'compare_scans'] : TOOLS;
  await step(`${L}: tools/list names the ${typed ? 'twelve' : 'nine'} tools${typed ? ' with outputSchema and title' : ''}`, async () => {
    tools = (await client.listTools()).tools;
    const names = tools.map((t) => t.name);
    assert(JSON.stringify(names) === JSON.stringify(listed), `tools ${names}`);
    for (const t of tools) {
      assert(t.inputSchema?.type === 'object', `${t.name}: inputSchema`);
      assert(!!t.outputSchema === typed && !!t.title === typed, `${t.name}: outputSchema/title ${!!t.outputSchema}/${!!t.title}`);
      assert(!!t.icons === spec.want >= '2025-11-25', `${t.name}: icons ${!!t.icons}`);
    }
  });
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args });
    const text = r.content?.[0]?.text;
    if (r.isError) return { error: text };
    // compare_scans' text is a summary in words; its payload is the structuredContent.
    if (name === 'compare_scans') {
      assert(/^Compared scan /.test(text) && r.structuredContent?.comparisons, `${name}: ${text.slice(0, 100)}`);
      return { payload: r.structuredContent };
    }
    const payload = JSON.parse(text);
    if (typed) {
      assert(JSON.stringify(r.structuredContent) === JSON.stringify(payload), `${name}: structuredContent is not the text's JSON`);
      if (name === 'generate_client_report') {
        assert(r.content[1]?.type === 'resource_link' && r.content[1].uri === payload.url, `${name}: no resource_link`);
      }
    } else {
      assert(r.structuredContent === undefined && r.content.length === 1, `${name}: a ${spec.want} result carries more than text`);
    }
    return { payload };
  };
  const counts = { ok: 0, toolErrors: 0 };
  const tally = (r) => { if (r.error) counts.toolErrors++; else counts.ok++; return r; };
  let sites = [];
  await step(`${L}: every tool on the demo data`, async () => {
    sites = tally(await call('list_sites', {})).payload.sites;
    const demo = sites.find((s) => s.name === 'Demo Site');
    assert(demo, 'no Demo Site');
    const latest = tally(await call('get_latest_scan', { siteId: demo.id })).payload;
    const trend = tally(await call('get_trend', { siteId: demo.id, limit: 10 })).payload;
    for (const scan of trend.scans) {
      for (const strategy of ['mobile', 'desktop']) {
        tally(await call('get_page_details', { scanId: scan.scanId, strategy }));
        tally(await call('get_lcp_elements', { scanId: scan.scanId, strategy }));
      }
    }
    const crux = tally(await call('get_page_details', { scanId: latest.scanId, pagePath: '/pricing', strategy: 'desktop' })).payload;
    assert(crux.crux === null, 'the /pricing desktop page was expected to have null CrUX');
    for (const severity of ['all', 'critical', 'serious', 'moderate', 'minor']) {
      tally(await call('get_accessibility_issues', { siteId: demo.id, severity }));
    }
    tally(await call('get_third_party_scripts', { siteId: demo.id }));
    tally(await call('get_regression_report', { siteId: demo.id }));
    if (typed && trend.scans.length > 1) {
      const cmp = tally(await call('compare_scans', { fromScanId: trend.scans.at(-2).scanId, toScanId: trend.scans.at(-1).scanId })).payload;
      assert(cmp.count > 0, 'compare_scans compared nothing');
    }
    tally(await call('generate_client_report', { scanId: latest.scanId, title: `CI ${spec.label}`, expiresInDays: 1 }));
    assert(counts.toolErrors === 0, `${counts.toolErrors} tool errors on the demo data`);
    return `${counts.ok} calls`;
  });
  await step(`${L}: every tool on edge data (no scan, failed pages, null CrUX, unknown ids)`, async () => {
    const before = { ...counts };
    const none = '00000000-0000-4000-8000-000000000000';
    for (const t of ['get_latest_scan', 'get_third_party_scripts', 'get_accessibility_issues', 'get_regression_report', 'get_trend']) {
      assert(tally(await call(t, { siteId: none })).error === 'Site not found or not owned by you', `${t} on an unknown site`);
      for (const id of [edge.never, edge.scanned].filter(Boolean)) tally(await call(t, { siteId: id }));
    }
    for (const t of ['get_page_details', 'get_lcp_elements', 'generate_client_report']) {
      assert(tally(await call(t, { scanId: none })).error?.startsWith('Scan not found'), `${t} on an unknown scan`);
    }
    if (edge.scanned) {
      const scan = tally(await call('get_latest_scan', { siteId: edge.scanned }));
      if (scan.payload) {
        for (const args of [{}, { pagePath: '/no-crux' }, { pagePath: '/broken' }, { strategy: 'desktop' }]) {
          tally(await call('get_page_details', { scanId: scan.payload.scanId, ...args }));
        }
        tally(await call('get_lcp_elements', { scanId: scan.payload.scanId }));
        tally(await call('generate_client_report', { scanId: scan.payload.scanId }));
      }
    }
    // Invalid arguments: a JSON-RPC error up to 2025-06-18, a tool error from 2025-11-25.
    let invalid;
    try {
      const r = await client.callTool({ name: 'get_trend', arguments: { siteId: sites[0].id, limit: 99 } });
      invalid = r.isError ? `tool error: ${r.content[0].text}` : 'no error';
    } catch (e) {
      invalid = `protocol error ${e.code}`;
    }
    const wantInvalid = spec.want >= '2025-11-25' ? 'tool error: Invalid arguments: limit must be at most 50' : 'protocol error -32602';
    assert(invalid.startsWith(wantInvalid), `invalid arguments gave ${invalid}, want ${wantInvalid}`);
    return `${counts.ok - before.ok} results, ${counts.toolErrors - before.toolErrors} tool errors; invalid arguments: ${invalid}`;
  });
  if (typed) {
    await step(`${L}: the client itself refuses structuredContent with a field its outputSchema does not declare`, async () => {
      state.tamper = true;
      let outcome = 'accepted';
      try {
        const r = await client.callTool({ name: 'list_sites', arguments: {} });
        if (r.isError) outcome = `tool error: ${r.content?.[0]?.text}`;
      } catch (e) {
        outcome = `refused: ${e.message}`;
      } finally {
        state.tamper = false;
      }
      assert(/output schema/i.test(outcome), `a tampered result was ${outcome}, not refused for its schema`);
      return outcome.slice(0, 140);
    });
  }
  await step(`${L}: no transport or validation errors`, async () => {
    assert(errors.length === 0, errors.map((e) => e.message).join('; '));
  });
  await client.close();
}

const web = await webSession().catch((e) => { check('web login for edge data', false, e.message); return null; });
let edge = {};
if (web) await step('edge sites created through the web UI', async () => { edge = await makeEdgeSites(web); return JSON.stringify(edge); });
if (edge.scanned) {
  await step('edge scan completes', async () => {
    const probe = new ClientV1({ name: 'probe', version: '1' }, { capabilities: {} });
    await probe.connect(new TransportV1(mcpUrl, { requestInit: auth }));
    for (let i = 0; i < 120; i++) { // the scan runs in the server: poll its answer, up to a minute
      const r = await probe.callTool({ name: 'get_latest_scan', arguments: { siteId: edge.scanned } });
      if (!r.isError) { await probe.close(); return `pagesTotal ${r.structuredContent.pagesTotal}`; }
      await new Promise((ok) => setTimeout(ok, 500));
    }
    await probe.close();
    throw new Error('no completed scan after a minute');
  });
}
for (const spec of clients) await run(spec, edge);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
