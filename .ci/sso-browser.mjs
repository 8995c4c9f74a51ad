#!/usr/bin/env node
// Signs in to a running SitePulse through a real OpenID provider in headless Chromium, as a
// person does: the login page's "Sign in with ..." button, the provider's own login form, and
// back, signed in. Driven over the DevTools protocol with Node 22's WebSocket: no packages.
// Started by the Go test TestSSORealProviderInChromium (system_sso_test.go).
//
// Env: BASE_URL (http://127.0.0.1:PORT), ISSUER (the provider's), USERNAME, PASSWORD,
// CHROMIUM (default /usr/bin/chromium), SHOTS (a directory: screenshots of the login page at
// 1280 and 375 px; empty: none). Prints PASS/FAIL lines; exit 1 on a failure.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const base = (process.env.BASE_URL ?? '').replace(/\/$/, '');
const issuer = process.env.ISSUER ?? '';
if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(base) || !issuer.startsWith('http://127.0.0.1:')) {
  console.error('BASE_URL and ISSUER must be http://127.0.0.1:PORT addresses');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'sso-chromium-'));
const chrome = spawn(process.env.CHROMIUM ?? '/usr/bin/chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  `--user-data-dir=${profile}`, '--remote-debugging-port=0', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
let failed = 0;
function check(name, ok, detail = '') {
  if (!ok) failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}
// finish stops Chromium, and removes its profile once it has exited (it writes until then).
function finish(code) {
  const done = () => {
    try { rmSync(profile, { recursive: true, force: true }); } catch { /* a temporary directory */ }
    process.exit(code);
  };
  if (chrome.exitCode !== null || chrome.signalCode !== null) done();
  chrome.once('exit', done);
  chrome.kill('SIGKILL');
}
setTimeout(() => { console.log('FAIL the sign-in did not finish within 60 s'); finish(1); }, 60000).unref();

const wsURL = await new Promise((resolve, reject) => {
  let err = '';
  chrome.stderr.on('data', (d) => {
    err += d;
    const m = err.match(/DevTools listening on (ws:\/\/\S+)/);
    if (m) resolve(m[1]);
  });
  chrome.on('exit', (c) => reject(new Error(`chromium exited ${c}: ${err.slice(0, 500)}`)));
});
const ws = new WebSocket(wsURL);
await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
let nextId = 1;
const pending = new Map();
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m.id && pending.has(m.id)) {
    const { resolve, reject } = pending.get(m.id);
    pending.delete(m.id);
    m.error ? reject(new Error(m.error.message)) : resolve(m.result);
  }
};
function send(method, params = {}, sessionId) {
  const id = nextId++;
  ws.send(JSON.stringify({ id, method, params, sessionId }));
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
const page = (method, params) => send(method, params, sessionId);
await page('Page.enable');
async function evaluate(expression) {
  const r = await page('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.text);
  return r.result.value;
}
const pace = (ms) => new Promise((r) => setTimeout(r, ms)); // polling pace of a browser, not a test wait
// waitFor polls until the page's address satisfies pred and the document is loaded.
async function waitFor(pred, what) {
  for (let i = 0; i < 300; i++) {
    let state;
    try { state = await evaluate('({href: location.href, ready: document.readyState})'); } catch { state = null; }
    if (state && state.ready === 'complete' && pred(state.href)) return state.href;
    await pace(100);
  }
  throw new Error(`never reached ${what}`);
}
async function shot(name, width) {
  if (!process.env.SHOTS) return;
  await page('Emulation.setDeviceMetricsOverride', { width, height: 900, deviceScaleFactor: 1, mobile: width < 600 });
  const { data } = await page('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  writeFileSync(join(process.env.SHOTS, `${name}-${width}.png`), Buffer.from(data, 'base64'));
}

try {
  await page('Page.navigate', { url: `${base}/login` });
  await waitFor((h) => h.startsWith(`${base}/login`), 'the login page');
  const button = await evaluate(`document.querySelector('a.sso')?.textContent ?? ''`);
  check('the login page offers the provider', /^Sign in with /.test(button), button);
  await shot('login-sso', 1280);
  await shot('login-sso', 375);
  await page('Emulation.clearDeviceMetricsOverride');
  await evaluate(`document.querySelector('a.sso').click()`);
  const at = await waitFor((h) => h.startsWith(issuer) && h.includes('login'), "the provider's login page");
  check("the button leads to the provider's login page", true, new URL(at).pathname);
  const filled = await evaluate(`(() => {
    const u = document.querySelector('input[name=username]'), p = document.querySelector('input[name=password]');
    if (!u || !p) return false;
    u.value = ${JSON.stringify(process.env.USERNAME ?? '')}; p.value = ${JSON.stringify(process.env.PASSWORD ?? '')};
    u.form.submit();
    return true;
  })()`);
  check("the provider's form takes the person's name and password", filled);
  const back = await waitFor((h) => h.startsWith(base) && !h.includes('/login'), 'SitePulse, signed in');
  check('the provider sends the browser back to SitePulse, signed in', new URL(back).pathname === '/', back);
  const nav = await evaluate(`document.querySelector('header')?.innerText ?? ''`);
  check('the page is a signed-in one (Log out in the header)', /Log out|Settings/.test(nav), nav.replace(/\s+/g, ' ').slice(0, 120));
  const settings = await evaluate(`fetch('/settings').then(r => r.text()).then(t => t.includes('csrf_token') ? 'ok' : 'no')`);
  check('the session opens the settings', settings === 'ok');
  if (process.env.SHOTS) {
    // The personal workspace's single sign-on page, signed in through the provider.
    const ws = await evaluate(`Promise.all(['/', '/settings'].map(p => fetch(p).then(r => r.text()))).then(ts => (ts.join(' ').match(new RegExp('/workspaces/([0-9a-f-]{36})')) || [])[1] || '')`);
    await page('Page.navigate', { url: `${base}/workspaces/${ws}/sso` });
    await waitFor((h) => h.endsWith('/sso'), 'the single sign-on page');
    const heading = await evaluate(`document.querySelector('h1')?.textContent ?? ''`);
    check('the workspace\'s single sign-on page opens', heading === 'Single sign-on', heading);
    await shot('workspace-sso', 1280);
    await shot('workspace-sso', 375);
  }
} catch (e) {
  check('the sign-in', false, e.message);
}
finish(failed ? 1 : 0);
