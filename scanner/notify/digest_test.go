package notify

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

func TestDigestCompose(t *testing.T) {
	d := &Digest{BaseURL: "https://sitepulse.example.com/"}
	site := store.Site{ID: "s1", Name: "Shop\r\nBcc: evil@example.com", Domain: "shop.example"}
	subject, body := d.compose(site, "scan2", "scan1", []analysis.Regression{
		{Metric: "performance", From: 92, To: 16, Delta: -76, PagePath: "/", Strategy: "mobile"},
		{Metric: "lcp", From: 1200.4, To: 8305, Delta: 7104.6, PagePath: "/", Strategy: "mobile"},
		{Metric: "cls", From: 0.02, To: 0.39, Delta: 0.37, PagePath: "/blog/", Strategy: "desktop"},
	})
	if strings.ContainsAny(subject, "\r\n") || subject != "SitePulse: 3 regressions on Shop Bcc: evil@example.com" {
		t.Errorf("subject = %q", subject)
	}
	for _, want := range []string{"performance", "92", "16", "1200 ms", "8305 ms", "0.020", "0.390", "/blog/", "desktop",
		"https://sitepulse.example.com/sites/s1", "Scan scan2, compared with scan scan1"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

// membersStore is a DigestStore of one site's two scans and its workspace's members.
type membersStore struct {
	members  []store.Member
	reader   string          // the user the scans were read as
	enqueued []store.JobArgs // the jobs the digest enqueued
}

func (m *membersStore) ScanForJob(_ context.Context, scanID string) (store.Scan, store.Site, error) {
	return store.Scan{ID: scanID}, store.Site{ID: "s1", UserID: "u-gone", WorkspaceID: "w1", Name: "Shop"}, nil
}

func (m *membersStore) CompletedScans(_ context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	m.reader = userID
	return []store.Scan{{ID: "new"}, {ID: "old"}}, nil
}

func (m *membersStore) PageResults(_ context.Context, userID, scanID string) ([]store.PageResult, error) {
	perf := 95
	if scanID == "new" {
		perf = 40
	}
	return []store.PageResult{{PagePath: "/", Strategy: "mobile", Scores: store.PageScores{Performance: &perf}}}, nil
}

func (m *membersStore) UserByID(context.Context, string) (store.User, error) {
	return store.User{}, errors.New("the digest of a workspace's site reads its members, not its adder")
}

func (m *membersStore) Members(context.Context, string) ([]store.Member, error) {
	return m.members, nil
}

func (m *membersStore) EnqueueJob(_ context.Context, args store.JobArgs, _ time.Time) (store.Job, error) {
	m.enqueued = append(m.enqueued, args)
	return store.Job{}, nil
}

// The digest of a workspace's site goes to every member with regression e-mails on for it,
// and to no one else, one job per recipient so that a retry mails only the member it failed
// for; its scans are read as a member, whoever added the site.
func TestDigestGoesToMembersWithNotificationsOn(t *testing.T) {
	st := &membersStore{members: []store.Member{
		{UserID: "u-owner", Email: "owner@example.com", Role: store.RoleOwner, NotifyRegressions: true},
		{UserID: "u-editor", Email: "editor@example.com", Role: store.RoleEditor, NotifyRegressions: false},
		{UserID: "u-viewer", Email: "viewer@example.com", Role: store.RoleViewer, NotifyRegressions: true},
	}}
	var logs bytes.Buffer
	d := &Digest{Store: st, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	if err := d.Work(ctx, store.Job{}, DigestJob{ScanID: "new"}); err != nil {
		t.Fatal(err)
	}
	want := []store.JobArgs{DigestJob{ScanID: "new", To: "owner@example.com"}, DigestJob{ScanID: "new", To: "viewer@example.com"}}
	if len(st.enqueued) != len(want) || st.enqueued[0] != want[0] || st.enqueued[1] != want[1] {
		t.Fatalf("enqueued %v, want one job per member with e-mails on: %v", st.enqueued, want)
	}
	for _, j := range st.enqueued {
		if err := d.Work(ctx, store.Job{}, j.(DigestJob)); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	for _, want := range []string{"to=owner@example.com", "to=viewer@example.com"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want one digest %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "editor@example.com") || st.reader != "u-owner" {
		t.Errorf("digest to a member with e-mails off, or scans read as %q:\n%s", st.reader, out)
	}
}
