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

// The digest lists every regression of the sample site's publish and says, per regressed page,
// what changed: the widget and the later hero image on /, the slower document on /pricing.
func TestDigestCompose(t *testing.T) {
	d := &Digest{BaseURL: "https://sitepulse.example.com/"}
	site := store.Site{ID: "s1", Name: "Shop\r\nBcc: evil@example.com", Domain: "shop.example"}
	changes := analysis.RegressedChanges(runPairs(fixtureRuns("psi-before"), fixtureRuns("psi")))
	subject, body := d.compose(site, "scan2", "scan1", changes)
	if strings.ContainsAny(subject, "\r\n") || subject != "SitePulse: 15 regressions on Shop Bcc: evil@example.com" {
		t.Errorf("subject = %q", subject)
	}
	for _, want := range []string{"performance", "49", "16", "3598 ms", "4621 ms", "0.000", "0.390", "/pricing", "desktop",
		"/ (mobile): Performance -33", "new third party widgetly.test", "unsized image body > section.hero > img.hero-img (/static/img/hero.jpg) shifted body > main (0.27)",
		"/pricing (mobile): Performance -36", "the document /pricing took 803 ms longer to arrive",
		"https://sitepulse.example.com/sites/s1", "Scan scan2, compared with scan scan1"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	for _, quiet := range []string{"/blog", "/about", "/fast"} {
		if strings.Contains(body, quiet) {
			t.Errorf("body names %s, which did not change:\n%s", quiet, body)
		}
	}
	golden(t, "digest-regression.txt", []byte(subject+"\n\n"+body))
}

// membersStore is a DigestStore of one site's two scans and its workspace's members.
type membersStore struct {
	members  []store.Member
	reader   string          // the user the scans were read as
	enqueued []store.JobArgs // the jobs the digest enqueued
}

func (m *membersStore) PublishesOfScans(context.Context, string, []string) (map[string]store.Publish, error) {
	return nil, nil
}

func (m *membersStore) ScanForJob(_ context.Context, scanID string) (store.Scan, store.Site, error) {
	return store.Scan{ID: scanID}, store.Site{ID: "s1", UserID: "u-gone", WorkspaceID: "w1", Name: "Shop"}, nil
}

func (m *membersStore) PreviousPairs(_ context.Context, userID, scanID string) (store.ScanPairs, error) {
	m.reader = userID
	perf := func(v int) store.PageResult {
		return store.PageResult{PagePath: "/", Strategy: "mobile", Scores: store.PageScores{Performance: &v}}
	}
	return store.ScanPairs{From: &store.Scan{ID: "old"}, To: store.Scan{ID: scanID}, Pairs: []store.RunPair{{Before: perf(95), After: perf(40)}}}, nil
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

// The digest says how sure each page's cause is when it is not high (issue 42).
func TestDigestSaysHowSure(t *testing.T) {
	changes := analysis.RegressedChanges(runPairs(fixtureRuns("psi-before"), fixtureRuns("psi")))
	sure := func(c analysis.PageChange, x analysis.Cause) string {
		if c.PagePath == "/" && c.Strategy == store.StrategyMobile && x.Metric == "performance" {
			return analysis.ConfidenceMedium
		}
		return analysis.ConfidenceHigh
	}
	for i, c := range changes {
		for j := range c.Causes {
			changes[i].Causes[j].Confidence = analysis.ConfidenceHigh
		}
	}
	_, body := (&Digest{}).compose(store.Site{Name: "Shop"}, "scan2", "scan1", changes)
	if strings.Contains(body, "confidence") {
		t.Errorf("high causes are stated plainly:\n%s", body)
	}
	for i, c := range changes {
		for j, x := range c.Causes {
			changes[i].Causes[j].Confidence = sure(c, x)
		}
	}
	_, body = (&Digest{}).compose(store.Site{Name: "Shop"}, "scan2", "scan1", changes)
	if !strings.Contains(body, "\n/ (mobile), medium confidence: Performance -33") || strings.Count(body, "confidence") != 1 {
		t.Errorf("the digest does not hedge the less sure cause once:\n%s", body)
	}
}
