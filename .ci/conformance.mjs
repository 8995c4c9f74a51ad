#!/usr/bin/env node
// The official MCP conformance suite against a running SitePulse, through a proxy on 127.0.0.1
// that adds the bearer token (the suite has no option to send one):
//   @modelcontextprotocol/conformance 0.2.0-alpha.12 with --requirements 2025-11-25, then
//   --requirements 2026-07-28 (the CLI takes one revision per run), each against the baseline in
//   .ci/conformance-expected-failures.txt (its [revision] section; one reason per line);
//   0.1.16 with the scenarios that apply to a tools-only server (server-initialize, tools-list, ping).
// Env: BASE_URL, API_KEY, INTEROP_DIR (default /tmp/interop), CONFORMANCE_OUT (default
// /tmp/sitepulse-conformance). Ends with one line per run and "N runs passed, M failed".
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const kit = process.env.INTEROP_DIR ?? '/tmp/interop';
const base = (process.env.BASE_URL ?? '').replace(/\/$/, '');
const apiKey = process.env.API_KEY ?? '';
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(base) || !apiKey) {
  console.error('BASE_URL (a loopback http://127.0.0.1:PORT) and API_KEY are required');
  process.exit(2);
}
const out = process.env.CONFORMANCE_OUT ?? '/tmp/sitepulse-conformance';
mkdirSync(out, { recursive: true });
const node = path.join(kit, 'node_modules', 'node', 'bin', 'node'); // the suite needs Node 22
const cli = (pkg) => path.join(kit, 'node_modules', ...pkg.split('/'), 'dist', 'index.js');
const target = new URL(`${base}/api/mcp`);

// baseline turns one [revision] section of the expected-failures file into the suite's YAML.
function baseline(revision) {
  const file = fileURLToPath(new URL('conformance-expected-failures.txt', import.meta.url));
  let section = '';
  const entries = [];
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const m = line.match(/^\[(.+)\]$/);
    if (m) { section = m[1]; continue; }
    if (section === revision) entries.push(line);
  }
  const yaml = path.join(out, `expected-${revision}.yaml`);
  writeFileSync(yaml, `server: [${entries.map((e) => JSON.stringify(e)).join(', ')}]\n`);
  return yaml;
}

const proxy = http.createServer((req, res) => {
  const headers = { ...req.headers, host: target.host, authorization: req.headers.authorization ?? `Bearer ${apiKey}` };
  delete headers.connection;
  const up = http.request({ hostname: target.hostname, port: target.port, method: req.method, path: target.pathname, headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
  });
  up.on('error', (e) => { res.writeHead(502); res.end(`proxy error: ${e.message}`); });
  req.pipe(up);
});
await new Promise((ok) => proxy.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;

function run(label, pkg, args) {
  return new Promise((resolve) => {
    console.log(`\n## ${label}\n$ node ${path.relative(kit, cli(pkg))} ${args.join(' ')}`);
    const child = spawn(node, [cli(pkg), ...args], { cwd: kit, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
    child.stdout.on('data', (d) => process.stdout.write(d));
    child.stderr.on('data', (d) => process.stdout.write(d));
    child.on('close', (code) => resolve({ label, code }));
  });
}

const runs = [];
for (const revision of ['2025-11-25', '2026-07-28']) {
  runs.push(await run(`conformance 0.2.0-alpha.12 --requirements ${revision}`, 'conformance-next',
    ['server', '--url', url, '--requirements', revision, '--expected-failures', baseline(revision), '-o', path.join(out, revision)]));
}
for (const scenario of ['server-initialize', 'tools-list', 'ping']) {
  runs.push(await run(`conformance 0.1.16 --scenario ${scenario}`, '@modelcontextprotocol/conformance',
    ['server', '--url', url, '--scenario', scenario, '-o', path.join(out, '0.1.16')]));
}
proxy.close();
console.log('');
for (const r of runs) console.log(`${r.code === 0 ? 'PASS' : 'FAIL'} ${r.label} (exit ${r.code})`);
const failed = runs.filter((r) => r.code !== 0).length;
console.log(`${runs.length - failed} runs passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
