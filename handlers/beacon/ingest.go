package beacon

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

// Store is what the ingest needs of the store.
type Store interface {
	BeaconSiteByKey(ctx context.Context, publicID string) (store.BeaconSite, error)
	AddBeacons(ctx context.Context, b store.BeaconBatch) ([]store.BeaconSeen, error)
}

// Options bound the ingest; zero values take the defaults in New.
type Options struct {
	Now func() time.Time
	Log *slog.Logger
	// FlushEvery is how often accepted beacons are written, in one batch of upserts; 0 writes
	// each at once (tests, and the default of a handler built without run()). A crash loses
	// at most the beacons of one interval.
	FlushEvery time.Duration
	// DailyCap is BEACON_DAILY_CAP: the beacons a site keeps a day before sampling; past it,
	// one in 2, then one in 4 past twice the cap, and so on, each kept one counting for the
	// ones it stands for. Default 100,000.
	DailyCap int64
	// SiteRate and SiteBurst bound one site's beacons a second (BEACON_SITE_RATE), and
	// AddrRate and AddrBurst one address's (BEACON_ADDR_RATE): beyond them, 429.
	SiteRate, AddrRate   float64
	SiteBurst, AddrBurst float64
	// MaxPaths bounds the pages of one site a day kept apart; past it, a new path's beacons
	// count in the site-wide figure only. Default 500.
	MaxPaths int
	// MaxPending bounds the histogram cells held unwritten while the store is away; past it,
	// new beacons are dropped (still answered 204). Default 200,000.
	MaxPending int
	// Seed seeds the sampling's random choice; 0 picks one (tests fix it).
	Seed uint64
}

// Errors of Accept, mapped to statuses by the handler.
var (
	ErrUnknownSite = errors.New("no site has this beacon id")
	ErrOrigin      = errors.New("the beacon's Origin is not the site's")
	ErrRate        = errors.New("too many beacons; slow down")
	ErrUnavailable = errors.New("the beacon store is unavailable; retry shortly")
)

// Ingest accepts beacons: it checks the site and the origin, limits and samples, and adds
// each to histograms held in memory until the next flush. Nothing it holds identifies a
// visitor: addresses live only as keys of the address limiter's buckets, for seconds.
type Ingest struct {
	st   Store
	opts Options

	addrs, sites *buckets

	cacheMu sync.Mutex
	cache   map[string]cached // sites by public id, for a minute

	mu       sync.Mutex
	days     map[string]*siteDay
	counts   map[countKey]tally
	inter    map[interKey]interTally
	dropped  int64
	accepted int64
	sampled  int64
	rnd      *rand.Rand // the sampling's coin, under mu
}

type cached struct {
	site  store.BeaconSite
	found bool
	at    time.Time
}

// siteDay is what the ingest holds of a site's UTC day. The daily cap samples on the day's
// count across every process: the store's total at the last flush (stored, which holds
// acked of this process's own) plus what this process saw since (seen − acked). So N
// replicas keep what one would, and a restart goes on from the store's count; between two
// flushes each process may keep, past the cap, at most the beacons it saw since the last one.
type siteDay struct {
	site  string
	day   time.Time
	seen  int64 // beacons this process saw this day, kept or sampled away
	sent  int64 // of seen, how many a flush has sent (acked, or in flight)
	acked int64 // of seen, how many the store has counted
	// stored is the day's total across processes as the last flush answered it.
	stored int64
	paths  map[string]bool
	inter  map[interGroup]map[[2]string]bool // admitted (selector, event) per group and part class
}

type countKey struct {
	site   string
	day    time.Time
	path   string
	device store.FieldDevice
	metric string
	bin    int
}

type tally struct {
	count float64
	kept  int64
}

type interGroup struct {
	path   string
	device store.FieldDevice
	class  string // inp, lcp or cls: each has its own MaxBeaconInteractions
}

type interKey struct {
	site   string
	day    time.Time
	path   string
	device store.FieldDevice
	sel    string
	event  string
	part   string
	bin    int
}

type interTally struct {
	count float64
	seen  time.Time
}

// New makes an Ingest over st.
func New(st Store, o Options) *Ingest {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.DailyCap <= 0 {
		o.DailyCap = 100_000
	}
	if o.SiteRate <= 0 {
		o.SiteRate = 2000
	}
	if o.SiteBurst <= 0 {
		o.SiteBurst = 5 * o.SiteRate
	}
	if o.AddrRate <= 0 {
		o.AddrRate = 2
	}
	if o.AddrBurst <= 0 {
		o.AddrBurst = 30
	}
	if o.MaxPaths <= 0 {
		o.MaxPaths = 500
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 200_000
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	return &Ingest{st: st, opts: o, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), addrs: newBuckets(o.AddrRate, o.AddrBurst, o.Now), sites: newBuckets(o.SiteRate, o.SiteBurst, o.Now),
		cache: map[string]cached{}, days: map[string]*siteDay{}, counts: map[countKey]tally{}, inter: map[interKey]interTally{}}
}

// AllowAddr takes one of an address's beacons from its bucket: false past AddrRate. It is asked
// before anything else, so a flood of forged ids from one address never reaches the store.
func (in *Ingest) AllowAddr(addr string) bool { return in.addrs.take(addr) }

// site finds the site of a public id, from the cache when it was asked in the last minute.
func (in *Ingest) site(ctx context.Context, key string) (store.BeaconSite, error) {
	now := in.opts.Now()
	in.cacheMu.Lock()
	c, ok := in.cache[key]
	in.cacheMu.Unlock()
	if ok && now.Sub(c.at) < time.Minute {
		if !c.found {
			return store.BeaconSite{}, ErrUnknownSite
		}
		return c.site, nil
	}
	s, err := in.st.BeaconSiteByKey(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c = cached{at: now}
	case err != nil:
		return store.BeaconSite{}, ErrUnavailable
	default:
		c = cached{site: s, found: true, at: now}
	}
	in.cacheMu.Lock()
	if len(in.cache) >= 50_000 { // forged ids cannot grow it without bound
		clear(in.cache)
	}
	in.cache[key] = c
	in.cacheMu.Unlock()
	if !c.found {
		return store.BeaconSite{}, ErrUnknownSite
	}
	return s, nil
}

// OriginAllowed answers whether a beacon's Origin header is the site's: the origin of its
// domain, or the same with "www." added or removed (a site set up as example.com is often
// served at www.example.com, and the other way round). Scheme and port must match; no other
// subdomain is the site's.
func OriginAllowed(domain, origin string) bool {
	o, err := url.Parse(origin)
	s, err2 := url.Parse(store.SiteOrigin(domain))
	if err != nil || err2 != nil || o.Host == "" || o.Path != "" || o.User != nil || o.RawQuery != "" {
		return false
	}
	got, want := store.OriginOf(o), store.OriginOf(s)
	if got == want {
		return true
	}
	scheme, rest, _ := strings.Cut(want, "://")
	if strings.HasPrefix(rest, "www.") {
		return got == scheme+"://"+strings.TrimPrefix(rest, "www.")
	}
	return got == scheme+"://www."+rest
}

// Accept takes a parsed beacon for the site of key, sent from origin. A nil error means it was
// accepted (kept, or sampled away past the daily cap: both answer 204).
func (in *Ingest) Accept(ctx context.Context, key, origin string, b Beacon) error {
	site, err := in.site(ctx, key)
	if err != nil {
		return err
	}
	if !OriginAllowed(site.Domain, origin) {
		return ErrOrigin
	}
	if !in.sites.take(site.SiteID) {
		return ErrRate
	}
	now := in.opts.Now()
	day := store.BeaconDay(now)
	in.mu.Lock()
	sd := in.days[site.SiteID]
	if sd == nil || !sd.day.Equal(day) {
		sd = &siteDay{site: site.SiteID, day: day, paths: map[string]bool{}, inter: map[interGroup]map[[2]string]bool{}}
		in.days[site.SiteID] = sd
		in.forgetOldDays(day)
	}
	weight, keep := sample(sd.count(), in.opts.DailyCap, in.rnd)
	sd.seen++
	if !keep {
		in.sampled++
		in.mu.Unlock()
		return nil
	}
	if len(in.counts)+len(in.inter) >= in.opts.MaxPending {
		in.dropped++
		in.mu.Unlock()
		return nil
	}
	path := b.Path
	if !sd.paths[path] {
		if len(sd.paths) >= in.opts.MaxPaths {
			path = ""
		} else {
			sd.paths[path] = true
		}
	}
	add := func(metric string, bin int) {
		for _, p := range []string{path, ""} {
			k := countKey{site.SiteID, day, p, b.Device, metric, bin}
			t := in.counts[k]
			t.count += weight
			t.kept++
			in.counts[k] = t
			if path == "" {
				break
			}
		}
	}
	for _, f := range b.Figures {
		switch f.Metric {
		case store.BeaconNavMetric:
			add(store.BeaconNavMetric, slices.Index(store.BeaconNavigations, "soft"))
			continue
		case "ttfb": // sent once per document load: it counts the page view
			add(store.BeaconNavMetric, slices.Index(store.BeaconNavigations, b.Navigation))
		}
		add(f.Metric, store.BeaconBin(f.Metric, f.Value))
		if path == "" || f.Target == "" {
			continue
		}
		switch f.Metric {
		case "inp":
			in.interaction(sd, site.SiteID, day, path, b.Device, "inp", f.Target, f.EventType, weight, now, map[string]float64{
				"inp": f.Value, "input": f.InputDelay, "processing": f.ProcessingDuration, "presentation": f.PresentationDelay})
		case "lcp":
			in.interaction(sd, site.SiteID, day, path, b.Device, "lcp", f.Target, f.Resource, weight, now, map[string]float64{"lcp": f.Value})
		case "cls":
			in.interaction(sd, site.SiteID, day, path, b.Device, "cls", f.Target, "", weight, now, map[string]float64{"cls": f.Value})
		}
	}
	in.accepted++
	in.mu.Unlock()
	if in.opts.FlushEvery == 0 {
		if err := in.Flush(ctx); err != nil {
			return ErrUnavailable
		}
	}
	return nil
}

// interaction adds an element's figures to the slowest list (INP) or the element list (LCP,
// CLS), admitting at most MaxBeaconInteractions elements per page, device, class and day; the
// caller holds in.mu.
func (in *Ingest) interaction(sd *siteDay, siteID string, day time.Time, path string, device store.FieldDevice, class, sel, event string,
	weight float64, now time.Time, parts map[string]float64) {
	g := interGroup{path, device, class}
	kept := sd.inter[g]
	if kept == nil {
		kept = map[[2]string]bool{}
		sd.inter[g] = kept
	}
	if !kept[[2]string{sel, event}] {
		if len(kept) >= store.MaxBeaconInteractions {
			return
		}
		kept[[2]string{sel, event}] = true
	}
	for part, v := range parts {
		metric := store.BeaconPhaseMetric
		if part == "lcp" || part == "cls" {
			metric = part
		}
		k := interKey{siteID, day, path, device, sel, event, part, store.BeaconBin(metric, v)}
		t := in.inter[k]
		t.count += weight
		t.seen = now
		in.inter[k] = t
	}
}

// count is the day's beacons so far as the cap sees them: the store's total plus what this
// process saw since its last acknowledged flush, or this process's own count when larger (the
// store not yet reached today).
func (sd *siteDay) count() int64 { return max(sd.seen, sd.stored+sd.seen-sd.acked) }

// forgetOldDays drops the counters of sites not seen today; the caller holds in.mu.
func (in *Ingest) forgetOldDays(today time.Time) {
	for id, sd := range in.days {
		if sd.day.Before(today) {
			delete(in.days, id)
		}
	}
}

// sample decides the fate of a site's n-th beacon of the day (from 0) under a daily cap: below
// the cap every one is kept and counts 1; from cap to 2·cap one in 2 is kept at random,
// counting 2; from 2·cap to 4·cap one in 4, counting 4; and so on. Each doubling keeps about
// cap/2 beacons, so a day's kept beacons grow with the log of its traffic, and its histogram
// stays an unbiased estimate of all of them (the p75 unchanged in expectation, the counts
// scaled). The choice is random, not every k-th, so a periodic flood cannot choose what is kept.
func sample(n, dailyCap int64, rnd *rand.Rand) (weight float64, keep bool) {
	if n < dailyCap {
		return 1, true
	}
	level := bits.Len64(uint64(n / dailyCap)) // 1 for [cap, 2cap), 2 for [2cap, 4cap), ...
	if level > 30 {
		level = 30
	}
	step := int64(1) << level
	return float64(step), rnd.Int64N(step) == 0
}

// Flush writes what was accepted since the last flush in one batch. On failure the batch is
// kept for the next flush (up to MaxPending cells; beyond, the oldest batch is dropped and
// counted) and the error returned.
func (in *Ingest) Flush(ctx context.Context) error {
	in.mu.Lock()
	counts, inter := in.counts, in.inter
	var sent []sentDay
	for _, sd := range in.days {
		if sd.seen > sd.sent {
			sent = append(sent, sentDay{sd, sd.seen - sd.sent, sd.seen})
			sd.sent = sd.seen
		}
	}
	if len(counts) == 0 && len(inter) == 0 && len(sent) == 0 {
		in.mu.Unlock()
		return nil
	}
	in.counts, in.inter = map[countKey]tally{}, map[interKey]interTally{}
	in.mu.Unlock()
	var b store.BeaconBatch
	for k, t := range counts {
		b.Counts = append(b.Counts, store.BeaconCount{SiteID: k.site, Day: k.day, Path: k.path, Device: k.device, Metric: k.metric,
			Bin: k.bin, Count: t.count, Kept: t.kept})
	}
	for k, t := range inter {
		b.Interactions = append(b.Interactions, store.BeaconInteractionCount{SiteID: k.site, Day: k.day, Path: k.path, Device: k.device,
			Selector: k.sel, EventType: k.event, Part: k.part, Bin: k.bin, Count: t.count, Seen: t.seen})
	}
	for _, d := range sent {
		b.Seen = append(b.Seen, store.BeaconSeen{SiteID: d.sd.site, Day: d.sd.day, Seen: d.n})
	}
	totals, err := in.st.AddBeacons(ctx, b)
	in.mu.Lock()
	defer in.mu.Unlock()
	if err == nil {
		for _, d := range sent {
			for _, t := range totals {
				if t.SiteID == d.sd.site && t.Day.Equal(d.sd.day) {
					// Flushes may end out of order: the counts only grow.
					d.sd.stored, d.sd.acked = max(d.sd.stored, t.Seen), max(d.sd.acked, d.upTo)
				}
			}
		}
		return nil
	}
	for _, d := range sent {
		d.sd.sent -= d.n // sent again by the next flush
	}
	if len(in.counts)+len(in.inter)+len(counts)+len(inter) > in.opts.MaxPending {
		in.dropped += int64(len(counts) + len(inter))
		in.opts.Log.Warn("beacon flush failed; batch dropped past the pending bound", "cells", len(counts)+len(inter), "err", err)
		return err
	}
	for k, t := range counts {
		c := in.counts[k]
		c.count += t.count
		c.kept += t.kept
		in.counts[k] = c
	}
	for k, t := range inter {
		c := in.inter[k]
		c.count += t.count
		if t.seen.After(c.seen) {
			c.seen = t.seen
		}
		in.inter[k] = c
	}
	in.opts.Log.Warn("beacon flush failed; kept for the next", "cells", len(counts)+len(inter), "err", err)
	return err
}

// sentDay is a site's day count a flush sends: n more seen, seen up to upTo in all.
type sentDay struct {
	sd      *siteDay
	n, upTo int64
}

// Run flushes every FlushEvery until ctx ends, then once more (within 5 s) so that a shutdown
// loses nothing accepted.
func (in *Ingest) Run(ctx context.Context) {
	if in.opts.FlushEvery <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(in.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			in.Flush(fctx)
			cancel()
			return
		case <-t.C:
			in.Flush(ctx)
		}
	}
}

// Stats are the ingest's counters since start: beacons accepted and kept, sampled away past
// the daily cap, and dropped because the store was away too long.
type Stats struct{ Accepted, Sampled, Dropped int64 }

func (in *Ingest) Stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return Stats{in.accepted, in.sampled, in.dropped}
}

// buckets is a token bucket per key, bounded in keys: full buckets are forgotten when the map
// grows, and past maxKeys it starts afresh (each key then gets a full bucket again, which
// bounds memory, not fairness, under a flood of distinct addresses).
type buckets struct {
	mu          sync.Mutex
	rate, burst float64
	now         func() time.Time
	m           map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

const maxKeys = 100_000

func newBuckets(rate, burst float64, now func() time.Time) *buckets {
	return &buckets{rate: rate, burst: burst, now: now, m: map[string]*bucket{}}
}

func (b *buckets) take(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	k, ok := b.m[key]
	if !ok {
		if len(b.m) >= maxKeys {
			b.sweep(now)
		}
		k = &bucket{tokens: b.burst, at: now}
		b.m[key] = k
	}
	k.tokens = math.Min(b.burst, k.tokens+now.Sub(k.at).Seconds()*b.rate)
	k.at = now
	if k.tokens < 1 {
		return false
	}
	k.tokens--
	return true
}

func (b *buckets) sweep(now time.Time) {
	for key, k := range b.m {
		if k.tokens+now.Sub(k.at).Seconds()*b.rate >= b.burst {
			delete(b.m, key)
		}
	}
	if len(b.m) >= maxKeys {
		clear(b.m)
	}
}
