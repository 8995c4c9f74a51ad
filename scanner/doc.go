// Package scanner turns a publish into a stored scan: it discovers a site's pages, audits each
// with PageSpeed Insights or a local Lighthouse, extracts the page results from the Lighthouse
// reports, runs the worker pool that claims scan jobs, and holds the pure analysis every surface
// shares (scan scores, regressions, budgets, accessibility severity, third-party impact).
package scanner
