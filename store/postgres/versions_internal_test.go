package postgres

import (
	"testing"
	"time"
)

// What a held version answers, rule by rule: the feed's table.
func TestHeldVersionRules(t *testing.T) {
	const site, ws = "s1", "w1"
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		do   func(f *versionFeed, now *time.Time)
		want bool
	}{
		{"held", func(f *versionFeed, now *time.Time) {}, true},
		{"just under KeyCacheFor", func(f *versionFeed, now *time.Time) { *now = now.Add(KeyCacheFor - time.Millisecond) }, true},
		{"KeyCacheFor after it was read", func(f *versionFeed, now *time.Time) { *now = now.Add(KeyCacheFor) }, false},
		{"a clock gone back past KeyCacheFor", func(f *versionFeed, now *time.Time) { *now = now.Add(-KeyCacheFor) }, false},
		{"the site notified", func(f *versionFeed, now *time.Time) { f.notified(site) }, false},
		{"another site notified", func(f *versionFeed, now *time.Time) { f.notified(otherStripe(f, site)) }, true},
		{"a write of the process's own", func(f *versionFeed, now *time.Time) { f.writes.Add(1) }, false},
		{"the listener lost", func(f *versionFeed, now *time.Time) { f.reset(false) }, false},
		{"the listener reconnected", func(f *versionFeed, now *time.Time) { f.reset(true) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := start
			f := newVersionFeed()
			f.now = func() time.Time { return now }
			f.reset(true)
			f.put(site, ws, 7, f.mark(site))
			c.do(f, &now)
			v, ok := f.get(site, ws)
			if ok != c.want || (ok && v != 7) {
				t.Errorf("get = %d, %v; want held %v", v, ok, c.want)
			}
		})
	}
	t.Run("another workspace", func(t *testing.T) {
		f := newVersionFeed()
		f.reset(true)
		f.put(site, ws, 7, f.mark(site))
		if _, ok := f.get(site, "w2"); ok {
			t.Error("held for another workspace")
		}
	})
	t.Run("notified while read", func(t *testing.T) {
		f := newVersionFeed()
		f.reset(true)
		m := f.mark(site)
		f.notified(site) // its notification came between the mark and the answer
		f.put(site, ws, 7, m)
		if _, ok := f.get(site, ws); ok {
			t.Error("a version read across its notification is held")
		}
	})
	t.Run("not following", func(t *testing.T) {
		f := newVersionFeed()
		f.put(site, ws, 7, f.mark(site))
		if _, ok := f.get(site, ws); ok {
			t.Error("held without a listener")
		}
	})
}

// otherStripe is a site id whose stripe is not site's.
func otherStripe(f *versionFeed, site string) string {
	for i := 0; ; i++ {
		o := site + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if f.stripe(o) != f.stripe(site) {
			return o
		}
	}
}
