package store

import "encoding/json"

// Queue constants shared by both stores.
const (
	// MaxAttempts is how many times a job runs (a scan job before its scan fails), unless its
	// kind asks for more (MaxAttemptsOf).
	MaxAttempts = 3
	// RescueReason is recorded on a job the rescuer returned to the queue.
	RescueReason = "worker stopped sending heartbeats; job returned to the queue"
	// RescueGiveUp fails a scan whose last attempt's worker disappeared.
	RescueGiveUp = "worker stopped sending heartbeats on the last attempt"
)

// encodeResult is the stored (jsonb) form of a page result.
func EncodeResult(r PageResult) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // PageResult holds only JSON-safe values
	}
	return b
}

func DecodeResult(b []byte) (PageResult, error) {
	var r PageResult
	err := json.Unmarshal(b, &r)
	r.Runs = max(r.Runs, 1) // stored before runs were counted: one audit
	return r, err
}

// ExportFields is what an export writes of a result (store.EachPageResult streams only this):
// the page, scores, vitals, CrUX, opportunities, third-party scripts and accessibility issues.
// The audits, elements, diagnostics and stack packs, most of a stored result, are left out.
func ExportFields(r PageResult) PageResult {
	return PageResult{ScanID: r.ScanID, PageURL: r.PageURL, PagePath: r.PagePath, Strategy: r.Strategy,
		LighthouseVersion: r.LighthouseVersion, Runs: r.Runs, Scores: r.Scores, CoreWebVitals: r.CoreWebVitals, Crux: r.Crux,
		Opportunities: r.Opportunities, ThirdPartyScripts: r.ThirdPartyScripts, A11yIssues: r.A11yIssues}
}
