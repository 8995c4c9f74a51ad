package storetest_test

import (
	"os"
	"strings"
	"testing"
)

// rulesWrittenTwice are the rules written twice: in PL/pgSQL for Postgres (a migration's
// function, so concurrent takers are serialised inside the database) and in Go for the memory
// store. Nothing but the contract tests named here keeps the two equal: a change to one is a
// change to the other, run against both stores (go test ./store/storetest with DATABASE_URL).
// Each implementation names the tests beside its code; TestRulesWrittenTwice checks it does.
var rulesWrittenTwice = []struct {
	rule  string
	files []string // the PL/pgSQL and the Go, from the repository's root
	tests []string // the contract tests, run on both stores
}{
	{
		rule: "a workspace's daily audits and its paying accounts' (USER_DAILY_AUDITS, ACCOUNT_AUDIT_SHARE)",
		files: []string{"store/postgres/migrations/022_account_audits.sql", // take_audit, audit_payers
			"store/memory/audits.go"}, // TakeAudit, payers
		tests: []string{"testAuditBudget", "testAccountAuditBudget"},
	},
	{
		rule: "the key's day shared past the mark, with a reserve for newcomers (AUDIT_SHARE_MARK, NEWCOMER_RESERVE)",
		files: []string{"store/postgres/migrations/039_key_day_shares.sql", // admit_audit, take_audit
			"store/memory/audits.go", "store/fairshare.go"}, // TakeAudit, AdmitAudit
		tests: []string{"testAuditBudget", "testAccountAuditBudget", "testKeyDayShares"},
	},
	{
		rule: "an audit that calls no PSI key counts against its workspace's budget only (AuditLimits.KeyFree)",
		files: []string{"store/postgres/audits.go", // takeKeyFreeAuditSQL
			"store/memory/audits.go"}, // TakeAudit
		tests: []string{"testKeyFreeAudits"},
	},
	{
		rule: "an API key works while its maker is a member of its workspace, and reads that workspace's sites only",
		files: []string{"store/postgres/migrations/026_hot_path_functions.sql", // budget_key, api_key_by_hash
			"store/memory/users.go", "store/memory/budget.go"}, // APIKeyByHash, BudgetInputsByKey
		tests: []string{"testKeyWorkspace", "testBudgetInputsByKey", "testAPIKeys"},
	},
	{
		rule: "the claim: accounts, then workspaces, take turns, and neither gets more than a worker's cap (SCANS_PER_WORKSPACE, deliveries)",
		files: []string{"store/postgres/migrations/038_owning_account.sql", "store/postgres/queue.go", // owning_account, claimSQL
			"store/memory/queue.go"}, // ClaimJob, oldestOwner
		tests: []string{"testFairClaims", "testFairClaimsPerAccount"},
	},
}

func TestRulesWrittenTwice(t *testing.T) {
	var contract strings.Builder
	for _, f := range []string{"store_test.go", "workspace_test.go"} { // the suites' tables
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		contract.Write(b)
	}
	for _, r := range rulesWrittenTwice {
		for _, test := range r.tests {
			if !strings.Contains(contract.String(), ", "+test+"}") {
				t.Errorf("%s: %s is not in a contract suite's table (run on both stores)", r.rule, test)
			}
		}
		for _, f := range r.files {
			b, err := os.ReadFile("../../" + f)
			if err != nil {
				t.Fatal(err)
			}
			for _, test := range r.tests {
				if !strings.Contains(string(b), test) {
					t.Errorf("%s: %s does not name %s, the contract test that keeps it equal to its twin", r.rule, f, test)
				}
			}
		}
	}
}
