#!/usr/bin/env node
// A PageSpeed Insights double on 127.0.0.1 for the edge data of .ci/mcp-clients.mjs: run it, then
// start SitePulse with PAGESPEED_API_URL=http://127.0.0.1:$PSI_STUB_PORT/runPagespeed. It answers
// a page whose path ends in /broken with a Lighthouse runtime error (a final failure: the scan
// completes with a failed page), /no-crux with a real recorded run that has no CrUX field data,
// /slower with the recorded run of a fast page the first time it is asked for a strategy and the
// home page's (a regression) every later time, so a second scan's regression is confirmed by the
// re-audits (REGRESSION_CONFIRM_RUNS), and anything else with the recorded run of the home page,
// from testdata/psi.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const fixtures = fileURLToPath(new URL('../testdata/psi/', import.meta.url));
const port = Number(process.env.PSI_STUB_PORT ?? 18732);
const asked = new Map(); // page and strategy -> requests so far, for /slower
createServer((req, res) => {
  const q = new URL(req.url, 'http://stub').searchParams;
  const page = new URL(q.get('url') ?? 'http://x/').pathname;
  const strategy = (q.get('strategy') ?? 'mobile').toLowerCase() === 'desktop' ? 'desktop' : 'mobile';
  if (page.endsWith('/broken')) {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 400, message: 'Lighthouse returned error: FAILED_DOCUMENT_REQUEST. Lighthouse was unable to reliably load the page you requested. (Details: net::ERR_CONNECTION_REFUSED)' } }));
    return;
  }
  const key = `${q.get('url')} ${strategy}`;
  asked.set(key, (asked.get(key) ?? 0) + 1);
  const file = page.endsWith('/no-crux') ? 'pricing.desktop.json'
    : page.endsWith('/slower') && asked.get(key) === 1 ? `fast.${strategy}.json` : `home.${strategy}.json`;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(readFileSync(fixtures + file));
}).listen(port, '127.0.0.1', () => console.log(`psi stub on http://127.0.0.1:${port}/runPagespeed`));
