package store

import "testing"

// AdmitAudit at a day of 100 audits, a mark at 70, a reserve of 10 and newcomers' first scans
// of 4 audits: past the mark the 20 audits left before the reserve are shared among the askers.
func TestAdmitAudit(t *testing.T) {
	l := AuditLimits{Workspace: 1000, Account: 30, Day: 100, Mark: 70, Reserve: 10, Newcomer: 4}
	tests := []struct {
		name        string
		l           AuditLimits
		key, askers int
		a           AccountDay
		want        string
	}{
		{"below the mark, an account audits up to its budget", l, 69, 3, AccountDay{Used: 29}, ""},
		{"below the mark, its budget spent", l, 40, 3, AccountDay{Used: 30}, RefusedAccount},
		{"no account budget at all", AuditLimits{Account: 0, Day: 100}, 0, 0, AccountDay{}, RefusedAccount},
		{"the day unshared (Day 0): only the account's budget", AuditLimits{Account: 30}, 5000, 9, AccountDay{Used: 29, Late: 29}, ""},
		{"the day spent refuses everyone, a newcomer too", l, 100, 4, AccountDay{}, RefusedDay},
		{"at the mark, an early account with no late audit takes its share", l, 70, 4, AccountDay{Used: 20}, ""},
		{"past the mark, four askers: a share is 20/4 = 5, the fifth late audit is admitted", l, 80, 4, AccountDay{Used: 24, Late: 4}, ""},
		{"past the mark, four askers: the sixth late audit is refused", l, 80, 4, AccountDay{Used: 25, Late: 5}, RefusedShare},
		{"twenty askers: a share is one audit", l, 75, 20, AccountDay{Used: 3, Late: 1}, RefusedShare},
		{"more askers than audits left: a share of none", l, 71, 21, AccountDay{Used: 3}, RefusedShare},
		{"an early account cannot take the reserve, however little it spent", l, 90, 4, AccountDay{Used: 1}, RefusedReserve},
		{"a newcomer's first audit in the reserve", l, 90, 4, AccountDay{}, ""},
		{"a newcomer's fourth audit, in the reserve's last audit", l, 99, 5, AccountDay{Used: 3, Late: 3}, ""},
		{"a newcomer past its first scan's audits cannot take the reserve", l, 90, 5, AccountDay{Used: 4, Late: 4}, RefusedReserve},
		{"a newcomer past its first scan's audits shares what is left before the reserve", l, 72, 4, AccountDay{Used: 4, Late: 4}, ""},
		{"a newcomer past the mark before the reserve is admitted whatever the share", l, 85, 30, AccountDay{Used: 2, Late: 2}, ""},
		{"an account counted as an asker once it audited: the new one is counted with them", l, 70, 19, AccountDay{}, ""},
		{"the account budget binds a newcomer too", AuditLimits{Account: 3, Day: 100, Mark: 70, Reserve: 10, Newcomer: 4}, 90, 4, AccountDay{Used: 3, Late: 3}, RefusedAccount},
		{"a mark past the reserve leaves no share", AuditLimits{Account: 30, Day: 100, Mark: 95, Reserve: 10, Newcomer: 4}, 95, 2, AccountDay{Used: 5}, RefusedReserve},
		{"a mark at 0 shares the whole day", AuditLimits{Account: 100, Day: 100, Mark: 0, Reserve: 10, Newcomer: 0}, 10, 3, AccountDay{Used: 29, Late: 29}, ""},
		{"a mark at 0 shares the whole day: a third each", AuditLimits{Account: 100, Day: 100, Mark: 0, Reserve: 10, Newcomer: 0}, 10, 3, AccountDay{Used: 30, Late: 30}, RefusedShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AdmitAudit(tt.l, tt.key, tt.askers, tt.a); got != tt.want {
				t.Errorf("AdmitAudit(key %d, askers %d, %+v) = %q, want %q", tt.key, tt.askers, tt.a, got, tt.want)
			}
		})
	}
	if !LateAudit(l, 70) || LateAudit(l, 69) || LateAudit(AuditLimits{Account: 30}, 5000) {
		t.Error("LateAudit: an audit is late from the mark on, and never with the day unshared")
	}
}
