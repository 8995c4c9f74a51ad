#!/usr/bin/env node
// The MCP TypeScript SDK's own client-side OAuth (auth() and an OAuthClientProvider, what MCP
// clients ship) against SitePulse, four ways, each authorization response's iss checked by
// oauth4webapi (RFC 9207):
//   1. dynamic registration, client_secret_post;
//   2. dynamic registration, client_secret_basic;
//   3. a Client ID Metadata Document served by a local https server;
//   4. a read-only (mcp:read) token calling generate_client_report, then start_scan: 403
//      insufficient_scope, the SDK steps up to "mcp:read mcp:write", the user consents again,
//      the report is made and a scan starts.
// Run by .ci/interop-oauth.sh from a directory whose node_modules and lib/ are the interop
// kit's (../shared/interop). Env: BASE_URL, LOGIN_EMAIL, LOGIN_PASSWORD, CIMD_CERT, CIMD_KEY.
// Last line: "N passed, M failed"; exit 1 on any failure.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { MCP_PATH, TOOL_NAMES, Results, assert, assertEq, assertSameSet, baseUrlFromEnv, requireEnv, recordingFetch, withTimeout, errText } from './lib/common.mjs';
import { startCallbackServer, launchBrowser, authorizeInBrowser, getNoFollow } from './lib/browser.mjs';

const base = baseUrlFromEnv();
const email = requireEnv('LOGIN_EMAIL');
const password = requireEnv('LOGIN_PASSWORD');
const mcpUrl = `${base}${MCP_PATH}`;
const R = new Results(`SDK auth() flows against ${base}`);
const STEP_MS = 20000;
const libOpts = new URL(base).protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {};

/** An in-memory OAuthClientProvider, as an MCP client keeps one per server. */
function newProvider(redirectUri, metadata, clientMetadataUrl) {
  return {
    _client: undefined, _tokens: undefined, _verifier: undefined, _state: undefined, authUrl: undefined,
    get redirectUrl() { return redirectUri; },
    get clientMetadata() { return { redirect_uris: [redirectUri], response_types: ['code'], ...metadata }; },
    clientMetadataUrl,
    state() { this._state = crypto.randomBytes(16).toString('hex'); return this._state; },
    clientInformation() { return this._client; },
    saveClientInformation(ci) { this._client = ci; },
    tokens() { return this._tokens; },
    saveTokens(t) { this._tokens = t; },
    redirectToAuthorization(url) { this.authUrl = url; },
    saveCodeVerifier(v) { this._verifier = v; },
    codeVerifier() { return this._verifier; },
  };
}

function newClient() {
  const c = new Client({ name: 'sitepulse-ci-oauth', version: '0.1.0' }, { capabilities: {} });
  c.onerror = () => {};
  return c;
}

let browser, ctx, as;
const servers = [];

/**
 * Runs the SDK's flow for one provider: connect (401 -> discovery -> registration or CIMD ->
 * authorization URL), consent in the browser, iss checked by oauth4webapi, finishAuth, then a
 * connected client. Returns the wire log and the authorization URL.
 */
async function sdkFlow(provider, cb, { expectScope = 'mcp:read' } = {}) {
  const wire = [];
  const transport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: recordingFetch(wire) });
  const c1 = newClient();
  let err;
  try { await withTimeout(c1.connect(transport()), STEP_MS, 'SDK connect'); } catch (e) { err = e; }
  await c1.close().catch(() => {});
  assert(err instanceof UnauthorizedError, `expected UnauthorizedError (consent needed), got ${err ? errText(err) : 'a connection'}`);
  assert(provider.authUrl, 'the SDK never called redirectToAuthorization');
  assertEq(provider.authUrl.searchParams.get('scope'), expectScope, 'scope (from the 401 challenge)');
  const consentPage = (await getNoFollow(ctx, provider.authUrl.href)).text;
  const r = await authorizeInBrowser(ctx, { authorizeUrl: provider.authUrl.href, redirectUri: cb.redirectUri, callback: cb, decision: 'approve', email, password });
  // RFC 9207: the metadata says authorization_response_iss_parameter_supported, so oauth4webapi
  // requires iss and compares it with the issuer.
  const params = oauth.validateAuthResponse(as, { client_id: provider._client.client_id }, r.callbackUrl, provider._state);
  await withTimeout(transport().finishAuth(params.get('code')), STEP_MS, 'finishAuth');
  assert(provider._tokens?.access_token?.startsWith('at_'), 'no at_ access token saved');
  return { wire, consentPage, iss: r.callbackUrl.searchParams.get('iss') };
}

async function listAndCall(provider) {
  const c = newClient();
  try {
    await withTimeout(c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })), STEP_MS, 'connect');
    const tools = (await withTimeout(c.listTools(), STEP_MS, 'tools/list')).tools.map((t) => t.name);
    // The SDK speaks 2025-11-25, which lists the interface's nine tools, the two scan tools and
    // compare_scans.
    assertSameSet(tools, [...TOOL_NAMES, 'start_scan', 'get_scan', 'compare_scans'], 'tools');
    const res = await withTimeout(c.callTool({ name: 'list_sites', arguments: {} }), STEP_MS, 'list_sites');
    assert(!res.isError && /"sites"/.test(res.content?.[0]?.text || ''), `list_sites: ${JSON.stringify(res).slice(0, 200)}`);
  } finally { await c.close().catch(() => {}); }
}

const tokenCall = (wire) => wire.find((w) => w.method === 'POST' && w.url === as.token_endpoint && /grant_type=authorization_code/.test(w.body || ''));

try {
  as = await oauth.processDiscoveryResponse(new URL(base), await oauth.discoveryRequest(new URL(base), { ...libOpts, algorithm: 'oauth2' }));
  await R.check('metadata advertises iss, CIMD, client_secret_basic and both scopes', async () => {
    assertEq(as.authorization_response_iss_parameter_supported, true, 'authorization_response_iss_parameter_supported');
    assertEq(as.client_id_metadata_document_supported, true, 'client_id_metadata_document_supported');
    assertSameSet(as.token_endpoint_auth_methods_supported, ['none', 'client_secret_post', 'client_secret_basic'], 'token_endpoint_auth_methods_supported');
    assertSameSet(as.scopes_supported, ['mcp:read', 'mcp:write'], 'scopes_supported');
  });
  ({ browser, context: ctx } = await launchBrowser());

  // 1 and 2: dynamic registration with each secret method.
  let readOnly;
  for (const method of ['client_secret_post', 'client_secret_basic']) {
    const cb = await startCallbackServer({ port: 0 });
    servers.push(cb);
    const provider = newProvider(cb.redirectUri, { client_name: `CI ${method}`, grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: method });
    const ok = await R.check(`SDK auth(): DCR with ${method}, consent, iss checked, code exchanged`, async () => {
      const { wire, iss } = await sdkFlow(provider, cb);
      assert(provider._client.client_secret?.startsWith('cs_'), 'no client secret registered');
      assertEq(provider._client.token_endpoint_auth_method, method, 'registered method');
      const call = tokenCall(wire);
      assert(call, 'token request not seen');
      const basic = /^Basic /.test(call.requestHeaders.authorization || '');
      const inBody = /(^|&)client_secret=/.test(call.body);
      assertEq({ basic, inBody }, method === 'client_secret_basic' ? { basic: true, inBody: false } : { basic: false, inBody: true }, 'where the secret went');
      assertEq(provider._tokens.scope, 'mcp:read', 'granted scope');
      return `iss=${iss}`;
    });
    if (ok) {
      await R.check(`SDK client (${method}) lists the tools and calls list_sites`, () => listAndCall(provider));
      await R.check(`SDK refreshes with ${method} on a stale access token`, async () => {
        const before = provider._tokens;
        provider._tokens = { ...before, access_token: 'at_ci_stale' };
        const c = newClient();
        try {
          await withTimeout(c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })), STEP_MS, 'connect with a stale token');
          await withTimeout(c.ping(), STEP_MS, 'ping');
        } finally { await c.close().catch(() => {}); }
        assert(provider._tokens.access_token.startsWith('at_') && provider._tokens.refresh_token !== before.refresh_token, 'not refreshed and rotated');
      });
      readOnly ??= provider;
    }
  }

  // 3: a Client ID Metadata Document on a local https server.
  {
    const cb = await startCallbackServer({ port: 0 });
    servers.push(cb);
    let fetches = 0;
    let docUrl;
    const docServer = https.createServer({ cert: fs.readFileSync(requireEnv('CIMD_CERT')), key: fs.readFileSync(requireEnv('CIMD_KEY')) }, (req, res) => {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
      res.end(JSON.stringify({
        client_id: docUrl, client_name: 'CI metadata-document client', redirect_uris: [cb.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
      }));
    });
    await new Promise((r) => docServer.listen(0, '127.0.0.1', r));
    servers.push({ close: () => new Promise((r) => { docServer.closeAllConnections?.(); docServer.close(() => r()); }) });
    docUrl = `https://127.0.0.1:${docServer.address().port}/oauth/client-metadata.json`;
    const provider = newProvider(cb.redirectUri, { client_name: 'unused: the document names it', grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none' }, docUrl);
    const ok = await R.check('SDK auth() with a Client ID Metadata Document: no registration, consent names the document and its host, iss checked', async () => {
      const { wire, consentPage, iss } = await sdkFlow(provider, cb);
      assertEq(provider._client.client_id, docUrl, 'client_id');
      assert(!wire.some((w) => w.url === as.registration_endpoint), 'the SDK registered although the server takes metadata documents');
      assert(consentPage.includes('CI metadata-document client'), 'the consent page does not show the document\'s client_name');
      assert(consentPage.includes(`127.0.0.1:${docServer.address().port}`), 'the consent page does not show the document\'s host');
      assert(fetches >= 1, 'SitePulse never fetched the document');
      return `iss=${iss}, document fetched ${fetches}x`;
    });
    if (ok) await R.check('SDK client (metadata document) lists the tools and calls list_sites', () => listAndCall(provider));
  }

  // 4: step-up from mcp:read to mcp:write.
  const report = async (provider) => {
    const c = newClient();
    try {
      await withTimeout(c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })), STEP_MS, 'connect');
      const sites = JSON.parse((await c.callTool({ name: 'list_sites', arguments: {} })).content[0].text);
      const scan = JSON.parse((await c.callTool({ name: 'get_latest_scan', arguments: { siteId: sites.sites[0].id } })).content[0].text);
      return await withTimeout(c.callTool({ name: 'generate_client_report', arguments: { scanId: scan.scanId, expiresInDays: 1 } }), STEP_MS * 2, 'generate_client_report');
    } finally { await c.close().catch(() => {}); }
  };
  if (readOnly) {
    // start_scan is listed from 2025-06-18 on: that request names its version.
    for (const [tool, args, version] of [['generate_client_report', { scanId: '00000000-0000-4000-8000-000000000000' }], ['start_scan', { siteId: '00000000-0000-4000-8000-000000000000' }, '2025-06-18']]) {
      await R.check(`a read-only token calling ${tool} gets 403 insufficient_scope naming mcp:read mcp:write`, async () => {
        const res = await fetch(mcpUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${readOnly._tokens.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
            ...(version ? { 'mcp-protocol-version': version } : {}) },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: args } }),
        });
        assertEq(res.status, 403, 'status');
        const h = res.headers.get('www-authenticate') || '';
        assert(/error="insufficient_scope"/.test(h) && /scope="mcp:read mcp:write"/.test(h) && /resource_metadata="/.test(h), `WWW-Authenticate: ${h}`);
        return h;
      });
    }
    // SDK 1.32.2 answers a 403 insufficient_scope by calling auth() with the challenge's scope;
    // holding a refresh token, auth() refreshes (the refresh grant cannot widen a scope), retries
    // and gives up. Recorded as what it is, not counted.
    try {
      await report(readOnly);
      console.log('INFO SDK 1.32.2 holding a refresh token: the step-up succeeded');
    } catch (e) {
      console.log(`INFO SDK 1.32.2 holding a refresh token does not step up (it refreshes instead of asking again): ${errText(e)}`);
    }
    const cb = await startCallbackServer({ port: 0 });
    servers.push(cb);
    // A client that keeps no refresh token (registered without the refresh_token grant):
    // auth() then asks the user again, for the challenge's scope.
    const provider = newProvider(cb.redirectUri, { client_name: 'CI step-up client', grant_types: ['authorization_code'], token_endpoint_auth_method: 'none' });
    await R.check('SDK steps a read-only token up to mcp:write after the 403: consent again, iss checked, the report is made and a scan started', async () => {
      await sdkFlow(provider, cb);
      assertEq(provider._tokens.scope, 'mcp:read', 'first grant');
      assert(!provider._tokens.refresh_token, 'a refresh token was issued to a client without the refresh_token grant');
      provider.authUrl = undefined;
      let err;
      try { await report(provider); } catch (e) { err = e; }
      assert(err instanceof UnauthorizedError, `expected the SDK to ask for consent again (UnauthorizedError), got ${err ? errText(err) : 'success'}`);
      assertEq(provider.authUrl?.searchParams.get('scope'), 'mcp:read mcp:write', 'step-up scope');
      const page = (await getNoFollow(ctx, provider.authUrl.href)).text;
      assert(page.includes('mcp:write') && page.includes('create shareable report links'), 'the consent page does not explain mcp:write');
      const r = await authorizeInBrowser(ctx, { authorizeUrl: provider.authUrl.href, redirectUri: cb.redirectUri, callback: cb, decision: 'approve', email, password });
      const params = oauth.validateAuthResponse(as, { client_id: provider._client.client_id }, r.callbackUrl, provider._state);
      await withTimeout(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }).finishAuth(params.get('code')), STEP_MS, 'finishAuth');
      assertEq(provider._tokens.scope, 'mcp:read mcp:write', 'stepped-up grant');
      const res = await report(provider);
      assert(!res.isError && /\/report\//.test(res.content?.[0]?.text || ''), `generate_client_report: ${JSON.stringify(res).slice(0, 300)}`);
      // The stepped-up token starts a scan too (start_scan, mcp:write).
      const c = newClient();
      await withTimeout(c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })), STEP_MS, 'connect');
      const site = JSON.parse((await c.callTool({ name: 'list_sites', arguments: {} })).content[0].text).sites[0];
      const started = await c.callTool({ name: 'start_scan', arguments: { siteId: site.id } });
      await c.close().catch(() => {});
      assert(!started.isError && /"scanId"/.test(started.content?.[0]?.text || ''), `start_scan: ${JSON.stringify(started).slice(0, 300)}`);
      return 'scope mcp:read -> mcp:read mcp:write; the report made, a scan started';
    });
  }
} catch (e) {
  R.failed++;
  R.failures.push(`aborted: ${errText(e)}`);
  console.log(`FAIL aborted: ${errText(e)}`);
  if (process.env.VERBOSE === '1') console.log(e.stack);
} finally {
  if (browser) await withTimeout(browser.close(), 10000, 'closing the browser').catch(() => {});
  for (const s of servers) await s.close();
}
R.finishAndExit();
