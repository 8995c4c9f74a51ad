// Package scanner runs SitePulse's work: the pool that runs the one durable job queue (pool.go,
// jobs.go, pool_retry.go), the scan pipeline that audits a scan's pages and stores their results
// (pipeline.go), scheduled scans (schedule.go), the scan deadline (deadline.go), the re-audit that
// confirms a regression (confirm.go), the audits-in-flight accounting (inflight.go) and the
// Auditor interfaces the pool runs (auditor.go).
//
// # Jobs have kinds
//
// Every kind of work is a job in one table, jobs(kind, args jsonb, ...): scans (kind "scan",
// args {"scanId"}), the digest e-mail (notify.KindDigest), the account e-mails
// (notify.KindAccountMail: links and notices, their bodies sealed), the planning of a finished scan's
// alerts (notify.KindAlerts) and each alert's delivery (notify.KindDelivery). Per kind the
// pool runs one dispatcher, which claims runnable jobs with FOR UPDATE SKIP LOCKED and wakes on
// LISTEN/NOTIFY or its poll, and that kind's workers. Every job is settled the same way: done,
// retried with backoff (attempt^4 s; or at the time its error's RetryAt() names, as a delivery
// honouring Retry-After does) until its attempts are spent and then discarded, snoozed
// without spending an attempt (return a *Snooze), or released at shutdown; a worker that
// loses its lease writes nothing more; the rescuer returns the jobs of dead processes; the
// cleaner deletes finished jobs a week later. Follow-up work is enqueued in the transaction that
// causes it: CompleteScan enqueues PoolConfig.Then (the digest and the alerts), a failed scan's
// transaction its alerts, and the alerts job the deliveries, so a crash loses none of it.
//
// Adding a kind is a few lines, in the package that does the work:
//
//	type PruneJob struct{ WorkspaceID string `json:"workspaceId"` }
//	func (PruneJob) Kind() string { return "prune" }
//	func (p *Pruner) Work(ctx context.Context, job store.Job, args PruneJob) error { ... }
//
// then one line in run() registers its worker, scanner.Work(1, pruner.Work), in
// PoolConfig.Kinds, and store.Jobs.EnqueueJob (or a store method's own transaction, as
// CompleteScan does) enqueues its jobs. Delivery is at least once: Work must be idempotent.
//
// Every background loop has a one-step method that tests call instead of waiting: WorkOnce
// (claim and run one job of a kind), RescueOnce, CleanOnce.
//
// Each stage of an audit lives in a package of its own:
//   - psi: the PageSpeed Insights client, rate limiter, capacity, breaker, daily quota and the
//     per-account daily audit budget;
//   - lighthouse: the local Lighthouse runner, the guarded proxy all of its Chrome's requests go
//     through (proxy.go), and the extraction of page results from reports;
//   - netguard: the outbound guard every user-directed request goes through;
//   - discover: page discovery from sitemaps, bounded per scan in time, decoded bytes and
//     children at once (the pool runs it outside a worker slot, pipeline.go's discover);
//   - notify: the digest e-mail and the alert channels: planning a finished scan's alerts and
//     delivering each, jobs of their own kinds;
//   - analysis: the pure analysis every surface shares (scores, regressions, budgets, severity,
//     third-party impact);
//   - platform: the Webflow client and connector;
//   - demo: the offline demo data and the replaying Auditor main puts before the real one.
package scanner
