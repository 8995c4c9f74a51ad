// Package scanner turns a publish into a stored scan: the worker pool that claims scan jobs
// (pool.go, pool_retry.go), the pipeline that audits a scan's pages and stores their results
// (pipeline.go), scheduled scans (schedule.go), the scan deadline (deadline.go), the re-audit
// that confirms a regression (confirm.go), the audits-in-flight accounting (inflight.go), the
// Auditor interface the pool runs (auditor.go) and, for now, the demo replay (replay.go).
//
// Each stage of an audit lives in a package of its own:
//   - psi: the PageSpeed Insights client, rate limiter, capacity, breaker, daily quota and the
//     per-account daily audit budget;
//   - lighthouse: the local Lighthouse runner, the guarded proxy all of its Chrome's requests go
//     through (proxy.go), and the extraction of page results from reports;
//   - netguard: the outbound guard every user-directed request goes through;
//   - discover: page discovery from sitemaps, bounded per scan in time, decoded bytes and
//     children at once (the pool runs it outside a worker slot, pipeline.go's discover);
//   - notify: the digest e-mail;
//   - analysis: the pure analysis every surface shares (scores, regressions, budgets, severity,
//     third-party impact);
//   - platform: the Webflow client and connector;
//   - demo: the offline demo data.
package scanner
