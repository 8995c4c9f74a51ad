#!/usr/bin/env node
// Signs in to a running SitePulse through a real OpenID provider in headless Chromium, as a
// person does. Driven over the DevTools protocol with Node 22's WebSocket: no packages.
// Started by the Go tests TestSSORealProviderInChromium and TestSSOWorkspaceProviderInChromium
// (system_sso_test.go).
//
// MODE=operator (the default): the provider is the operator's; the login page's "Sign in with
// ..." button, the provider's own login form, and back, signed in.
// MODE=workspace: the provider is a workspace's own, on a server with none: its owner (a
// password account, OWNER_EMAIL and OWNER_PASSWORD) registers it on the workspace's single
// sign-on page (CLIENT_ID, CLIENT_SECRET), is refused the requirement from the password
// session, signs in through it by the login page's work e-mail (WORK_EMAIL), requires single
// sign-on with just-in-time viewers; a newcomer (NEWCOMER_EMAIL, NEWCOMER_USERNAME at the
// provider) signs in the same way and opens the workspace; the owner's password session is
// then refused it.
//
// Env: BASE_URL (http://127.0.0.1:PORT), ISSUER (the provider's), USERNAME, PASSWORD (the
// provider's test user), CHROMIUM (default /usr/bin/chromium), SHOTS (a directory: screenshots
// at 1280 and 375 px; empty: none), and the MODE's. Prints PASS/FAIL lines; exit 1 on a failure.
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
setTimeout(() => { console.log('FAIL the sign-in did not finish within 120 s'); finish(1); }, 120000).unref();

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
// submit runs expression (which submits a form or clicks a link) and waits until the next
// document has loaded: the old one carries a mark the new one has not.
async function submit(expression, what) {
  await evaluate(`window.__stale = true; ${expression}`);
  for (let i = 0; i < 300; i++) {
    let state;
    try { state = await evaluate('({stale: window.__stale === true, ready: document.readyState, href: location.href})'); } catch { state = null; }
    if (state && !state.stale && state.ready === 'complete') return state.href;
    await pace(100);
  }
  throw new Error(`never left the page: ${what}`);
}
// signInAtProvider fills the provider's own login form and waits to be back at SitePulse.
async function signInAtProvider(username) {
  const at = await waitFor((h) => h.startsWith(issuer) && h.includes('login'), "the provider's login page");
  check("the sign-in leads to the provider's login page", true, new URL(at).pathname);
  const filled = await evaluate(`(() => {
    const u = document.querySelector('input[name=username]'), p = document.querySelector('input[name=password]');
    if (!u || !p) return false;
    u.value = ${JSON.stringify(username)}; p.value = ${JSON.stringify(process.env.PASSWORD ?? '')};
    u.form.submit();
    return true;
  })()`);
  check("the provider's form takes the person's name and password", filled);
  return waitFor((h) => h.startsWith(base) && !h.includes('/login'), 'SitePulse, signed in');
}
const text = (sel) => evaluate(`document.querySelector(${JSON.stringify(sel)})?.innerText ?? ''`);
const status = (path) => evaluate(`fetch(${JSON.stringify(path)}).then(r => r.status)`);

async function shot(name, width) {
  if (!process.env.SHOTS) return;
  await page('Emulation.setDeviceMetricsOverride', { width, height: 900, deviceScaleFactor: 1, mobile: width < 600 });
  const { data } = await page('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  writeFileSync(join(process.env.SHOTS, `${name}-${width}.png`), Buffer.from(data, 'base64'));
}

async function operatorMode() {
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
}

async function workspaceMode() {
  const ws = process.env.WORKSPACE ?? '';
  const ssoPage = `${base}/workspaces/${ws}/sso`;
  // The owner logs in with her password and registers the provider as the workspace's.
  await page('Page.navigate', { url: `${base}/login` });
  await waitFor((h) => h.startsWith(`${base}/login`), 'the login page');
  check('before any workspace has a provider, the login page asks for no work e-mail', !(await evaluate(`!!document.querySelector('#work_email')`)));
  await submit(`(() => { const f = document.querySelector('form[action="/login"]');
    f.email.value = ${JSON.stringify(process.env.OWNER_EMAIL ?? '')}; f.password.value = ${JSON.stringify(process.env.OWNER_PASSWORD ?? '')}; f.submit(); })()`, 'the password login');
  await page('Page.navigate', { url: ssoPage });
  await waitFor((h) => h === ssoPage, "the workspace's single sign-on page");
  await submit(`(() => { const f = document.querySelector('form[action$="/sso/provider"]');
    f.issuer.value = ${JSON.stringify(issuer)}; f.client_id.value = ${JSON.stringify(process.env.CLIENT_ID ?? '')};
    f.client_secret.value = ${JSON.stringify(process.env.CLIENT_SECRET ?? '')}; f.submit(); })()`, 'the provider form');
  const own = await text('#own-provider');
  check("the page shows the workspace's provider, its secret set", own.includes(issuer) && own.includes('secret set'), own.replace(/\s+/g, ' ').slice(0, 160));
  check('the page says the requirement is met through it', (await text('#provider')).includes('its requirement is met through it'));
  check('the owner may remove it while it is not required', await evaluate(`!!document.querySelector('form[action$="/sso/provider/delete"]')`));
  await shot('workspace-sso-provider', 1280);
  await page('Emulation.clearDeviceMetricsOverride');
  // From the password session the requirement is refused: it could lock her out.
  await submit(`(() => { const f = document.querySelector('form[action$="/sso/require"]'); f.required.checked = true; f.submit(); })()`, 'the requirement form');
  const refused = await text('p.error');
  check('requiring it from a password session is refused', refused.includes('could lock you out'), refused.slice(0, 160));

  // Signed out, the login page's work e-mail leads to the workspace's provider and back.
  await page('Network.clearBrowserCookies');
  await page('Page.navigate', { url: `${base}/login` });
  await waitFor((h) => h.startsWith(`${base}/login`), 'the login page');
  check('the login page asks for a work e-mail and offers no server-wide button',
    await evaluate(`!!document.querySelector('#work_email') && !document.querySelector('a.sso')`));
  await shot('login-work-email', 1280);
  await shot('login-work-email', 375);
  await page('Emulation.clearDeviceMetricsOverride');
  await evaluate(`(() => { const f = document.querySelector('form.sso'); f.email.value = ${JSON.stringify(process.env.WORK_EMAIL ?? '')}; f.submit(); })()`);
  const back = await signInAtProvider(process.env.USERNAME ?? '');
  check('the owner is back at SitePulse, signed in through the workspace\'s provider', new URL(back).pathname === '/', back);

  // Now she may require it, with newcomers joining as viewers.
  await page('Page.navigate', { url: ssoPage });
  await waitFor((h) => h === ssoPage, "the workspace's single sign-on page");
  await submit(`(() => { const f = document.querySelector('form[action$="/sso/require"]'); f.required.checked = true; f.jit_role.value = 'viewer'; f.submit(); })()`, 'the requirement form');
  const req = await text('#require');
  check('single sign-on is required through the workspace\'s provider', req.includes('required since') && req.includes(issuer), req.replace(/\s+/g, ' ').slice(0, 200));
  check('the provider cannot be removed while required', !(await evaluate(`!!document.querySelector('form[action$="/sso/provider/delete"]')`)));
  await evaluate('window.scrollTo(0, 0)');
  await shot('workspace-sso-required', 1280);
  await shot('workspace-sso-required', 375);
  await page('Emulation.clearDeviceMetricsOverride');
  check('her single sign-on session opens the workspace', (await status(`/workspaces/${ws}`)) === 200);

  // A newcomer of the domain signs in by their work e-mail and joins as a viewer.
  await page('Network.clearBrowserCookies');
  await page('Page.navigate', { url: `${base}/login` });
  await waitFor((h) => h.startsWith(`${base}/login`), 'the login page');
  await evaluate(`(() => { const f = document.querySelector('form.sso'); f.email.value = ${JSON.stringify(process.env.NEWCOMER_EMAIL ?? '')}; f.submit(); })()`);
  await signInAtProvider(process.env.NEWCOMER_USERNAME ?? '');
  check('the newcomer opens the workspace (joined on first sign-in)', (await status(`/workspaces/${ws}`)) === 200);

  // The owner's password session is refused the workspace now.
  await page('Network.clearBrowserCookies');
  await page('Page.navigate', { url: `${base}/login` });
  await waitFor((h) => h.startsWith(`${base}/login`), 'the login page');
  await submit(`(() => { const f = document.querySelector('form[action="/login"]');
    f.email.value = ${JSON.stringify(process.env.OWNER_EMAIL ?? '')}; f.password.value = ${JSON.stringify(process.env.OWNER_PASSWORD ?? '')}; f.submit(); })()`, 'the password login');
  check("the owner's password session is refused the workspace", (await status(`/workspaces/${ws}`)) === 403);
}

try {
  await (process.env.MODE === 'workspace' ? workspaceMode() : operatorMode());
} catch (e) {
  check('the sign-in', false, e.message);
}
finish(failed ? 1 : 0);
