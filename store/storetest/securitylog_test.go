package storetest_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestSecurityLog runs the security log's contract (issue 47) against every backend.
func TestSecurityLog(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"lines read back as appended, newest first, per workspace", testLogReadBack},
		{"filters by kind, kind prefix, actor and date range", testLogFilters},
		{"keyset pages walk every line once, ties at one instant included", testLogPages},
		{"a bad line is refused whole; hostile text is clipped", testLogRefuses},
		{"retention deletes only lines older than its bound", testLogPrune},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

func logLine(ws, actor, email, kind string, at time.Time) store.LogEvent {
	return store.LogEvent{WorkspaceID: ws, ActorID: actor, ActorEmail: email, Kind: kind, Target: "t", At: at,
		Details: map[string]string{"role": "editor"}, IP: "203.0.113.9", UserAgent: "Mozilla/5.0"}
}

func testLogReadBack(t *testing.T, s store.Store) {
	owner := newUser(t, s, "o@example.com")
	other := newUser(t, s, "x@example.com")
	w := team(t, s, owner, "Agency", nil)
	in := []store.LogEvent{
		logLine(w.ID, owner.ID, owner.Email, store.LogInvitationCreated, t0),
		logLine(w.ID, owner.ID, owner.Email, store.LogRoleChanged, t0.Add(time.Minute)),
		{WorkspaceID: w.ID, Kind: store.LogSignInFailed, At: t0.Add(2 * time.Minute)}, // no actor, no details
	}
	appendLog(t, s, in...)
	appendLog(t, s, logLine(store.PersonalWorkspace(other.ID), other.ID, other.Email, store.LogSignIn, t0))
	got, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID})
	must(t, err)
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3: %+v", len(got), got)
	}
	for i, g := range got {
		want := in[2-i]
		want.Seq = g.Seq
		if want.Details == nil {
			want.Details = map[string]string{}
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("line %d = %+v, want %+v", i, g, want)
		}
	}
	if !(got[0].Seq > got[1].Seq && got[1].Seq > got[2].Seq) {
		t.Errorf("seqs %d %d %d, want increasing in append order", got[2].Seq, got[1].Seq, got[0].Seq)
	}
	for _, id := range []string{"", "not-a-uuid", store.NewID(), store.PersonalWorkspace(owner.ID)} {
		if lines, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: id}); err != nil || len(lines) != 0 {
			t.Errorf("workspace %q: %+v, %v; want nothing", id, lines, err)
		}
	}
}

func testLogFilters(t *testing.T, s store.Store) {
	a := newUser(t, s, "ada@example.com")
	b := newUser(t, s, "bob@example.com")
	w := team(t, s, a, "Agency", map[store.User]store.Role{b: store.RoleEditor})
	appendLog(t, s,
		logLine(w.ID, a.ID, a.Email, store.LogSignIn, t0),
		logLine(w.ID, b.ID, b.Email, store.LogSignIn, t0.Add(time.Hour)),
		logLine(w.ID, b.ID, b.Email, store.LogSSOSignIn, t0.Add(2*time.Hour)),
		logLine(w.ID, a.ID, a.Email, store.LogSSOSettingsChanged, t0.Add(3*time.Hour)),
	)
	cases := []struct {
		name string
		f    store.LogFilter
		want []string
	}{
		{"a kind", store.LogFilter{Kind: store.LogSignIn}, []string{"bob@example.com auth.signin", "ada@example.com auth.signin"}},
		{"a kind prefix", store.LogFilter{Kind: "sso."}, []string{"ada@example.com sso.settings_changed", "bob@example.com sso.signin"}},
		{"an actor's e-mail in any case", store.LogFilter{Actor: "BOB@example.com"}, []string{"bob@example.com sso.signin", "bob@example.com auth.signin"}},
		{"an actor's id", store.LogFilter{Actor: a.ID, Kind: "sso."}, []string{"ada@example.com sso.settings_changed"}},
		{"from included, to excluded", store.LogFilter{From: t0.Add(time.Hour), To: t0.Add(3 * time.Hour)}, []string{"bob@example.com sso.signin", "bob@example.com auth.signin"}},
		{"an unknown actor", store.LogFilter{Actor: "nobody@example.com"}, nil},
		{"a hostile kind", store.LogFilter{Kind: "%'; --"}, nil},
	}
	for _, c := range cases {
		c.f.WorkspaceID = w.ID
		got, err := s.LogOf(ctx, c.f)
		must(t, err)
		var names []string
		for _, e := range got {
			names = append(names, e.ActorEmail+" "+e.Kind)
		}
		if fmt.Sprint(names) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, names, c.want)
		}
	}
}

func testLogPages(t *testing.T, s store.Store) {
	o := newUser(t, s, "o@example.com")
	w := team(t, s, o, "Agency", nil)
	var in []store.LogEvent
	for i := range 23 {
		// Three lines at each instant: the cursor must order ties by Seq.
		in = append(in, logLine(w.ID, o.ID, o.Email, store.LogSiteChanged, t0.Add(time.Duration(i/3)*time.Second)))
	}
	appendLog(t, s, in...)
	seen := map[int64]bool{}
	var cur *store.LogCursor
	pages := 0
	for {
		page, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID, Limit: 5, After: cur})
		must(t, err)
		if len(page) == 0 {
			break
		}
		pages++
		for _, e := range page {
			if seen[e.Seq] {
				t.Fatalf("line %d twice", e.Seq)
			}
			seen[e.Seq] = true
		}
		last := page[len(page)-1]
		cur = &store.LogCursor{At: last.At, Seq: last.Seq}
	}
	if len(seen) != 23 || pages != 5 {
		t.Errorf("walked %d lines in %d pages, want 23 in 5", len(seen), pages)
	}
}

func testLogRefuses(t *testing.T, s store.Store) {
	o := newUser(t, s, "o@example.com")
	w := team(t, s, o, "Agency", nil)
	good := logLine(w.ID, o.ID, o.Email, store.LogSignIn, t0)
	for name, bad := range map[string]store.LogEvent{
		"unknown kind":     {WorkspaceID: w.ID, Kind: "made.up", At: t0},
		"no workspace":     {Kind: store.LogSignIn, At: t0},
		"bad actor":        {WorkspaceID: w.ID, ActorID: "x", Kind: store.LogSignIn, At: t0},
		"bad detail name":  {WorkspaceID: w.ID, Kind: store.LogSignIn, Details: map[string]string{"a b": "c"}, At: t0},
		"too many details": {WorkspaceID: w.ID, Kind: store.LogSignIn, Details: manyDetails(store.MaxLogDetails + 1), At: t0},
	} {
		var fe *store.FieldError
		if _, err := s.AppendLog(ctx, good, bad); !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a FieldError", name, err)
		}
	}
	if lines, _ := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID}); len(lines) != 0 {
		t.Fatalf("a refused append wrote %+v", lines)
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'a'
	}
	hostile := logLine(w.ID, o.ID, o.Email, store.LogSignIn, t0)
	hostile.UserAgent = "evil\r\nX-Injected: 1" + string(long)
	hostile.Target = string(long) + "\x00\xff"
	appendLog(t, s, hostile)
	lines, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID})
	must(t, err)
	if len(lines) != 1 || len([]rune(lines[0].UserAgent)) != store.MaxLogUserAgent || lines[0].UserAgent[:6] != "evil  " || len([]rune(lines[0].Target)) != store.MaxLogTarget {
		t.Errorf("hostile line stored as %+v", lines)
	}
}

func manyDetails(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func testLogPrune(t *testing.T, s store.Store) {
	o := newUser(t, s, "o@example.com")
	w := team(t, s, o, "Agency", nil)
	appendLog(t, s,
		logLine(w.ID, o.ID, o.Email, store.LogSignIn, t0),
		logLine(w.ID, o.ID, o.Email, store.LogSignIn, t0.Add(time.Hour)),
		logLine(w.ID, o.ID, o.Email, store.LogSignIn, t0.Add(2*time.Hour)),
	)
	n, err := s.PruneLog(ctx, t0.Add(time.Hour))
	must(t, err)
	lines, _ := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID})
	if n != 1 || len(lines) != 2 || !lines[1].At.Equal(t0.Add(time.Hour)) {
		t.Errorf("pruned %d, left %+v; want the one line before the bound gone", n, lines)
	}
}

func appendLog(t *testing.T, s store.Store, events ...store.LogEvent) {
	t.Helper()
	got, err := s.AppendLog(ctx, events...)
	must(t, err)
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("appended lines got seqs %d then %d, want increasing", got[i-1].Seq, got[i].Seq)
		}
	}
}
