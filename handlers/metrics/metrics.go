// Package metrics is what GET /metrics tells Prometheus: the one table of families (families),
// written in the text exposition format by hand, the HTTP counts the middleware makes, and the
// scanner's outcomes counted by the stores' wrappers (counted.go).
package metrics

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sitepulse/store"
)

// Metrics is what GET /metrics tells Prometheus about this process, in the text exposition
// format written by hand (families, below, is the one table of them). The HTTP families are
// counted by the middleware (Begin, Observe, End); the scanner's counters are added by the
// stores' wrappers (CountedScans, CountedDeliveries); the other
// figures are read at each scrape from the sources main sets before serving.
type Metrics struct {
	// Role is the process's -role (web, worker or all), and Version the build's (sitepulse
	// -version): sitepulse_info's labels.
	Role, Version string
	// Scans counts the scans this process finished, by outcome: completed or failed.
	Scans Outcomes
	// Audits counts the audits this process made, by outcome: ok (a page result) or failed.
	Audits Outcomes
	// Deliveries counts the alert deliveries this process recorded, by outcome: the delivery
	// state (delivered, pending: to be tried again, failed).
	Deliveries Outcomes
	// Jobs reads the queue's figures at each scrape; nil leaves the job families out.
	Jobs JobFigures
	// JobKinds are the kinds of job the queue runs (scanner.Pool.Kinds): each has its job
	// series from the first scrape, 0 while none is queued.
	JobKinds []string
	// DB is the Postgres connection pool's figures; nil (the memory store) leaves them out.
	DB func() sql.DBStats
	// PSI is the PageSpeed Insights client's day (this process's calls counted against
	// PSI_DAILY_LIMIT) and its breaker's state; nil (AUDIT_BACKEND=lighthouse) leaves them out.
	PSI func() PSIFigures
	// Now is the clock of the oldest runnable job's age; nil is time.Now.
	Now func() time.Time

	inFlight atomic.Int64
	routes   sync.Map // route pattern -> *routeStats
}

// JobFigures is the store's one cheap read of the queue (store.Jobs.JobFigures).
type JobFigures interface {
	JobFigures(ctx context.Context, now time.Time) ([]store.JobFigure, error)
}

// PSIFigures is the PSI client's state at a scrape.
type PSIFigures struct {
	Used, Limit int
	// Breaker is closed, open or half_open.
	Breaker string
}

// Outcomes counts events by an outcome out of a fixed few (label values are the callers'
// constants, never data).
type Outcomes struct{ m sync.Map }

// Add counts one event of outcome.
func (o *Outcomes) Add(outcome string) {
	v, ok := o.m.Load(outcome)
	if !ok {
		v, _ = o.m.LoadOrStore(outcome, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// each calls fn for every outcome in order: the known ones (0 until counted) and any other
// counted.
func (o *Outcomes) each(known []string, fn func(outcome string, n int64)) {
	keys := slices.Clone(known)
	o.m.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		var n int64
		if v, ok := o.m.Load(k); ok {
			n = v.(*atomic.Int64).Load()
		}
		fn(k, n)
	}
}

// The outcomes each counter has a series of from the first scrape.
var (
	scanOutcomes     = []string{"completed", "failed"}
	auditOutcomes    = []string{"ok", "failed"}
	deliveryOutcomes = []string{store.DeliveryDelivered, store.DeliveryPending, store.DeliveryFailed}
	jobStates        = []store.JobState{store.JobAvailable, store.JobRunning}
)

// InFlight is the number of requests being answered now: shutdown waits for it to reach zero
// while /readyz answers 503.
func (m *Metrics) InFlight() int64 { return m.inFlight.Load() }

// latencyBuckets are the request duration histogram's upper bounds, in seconds.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// routeStats are one route pattern's requests: counts by status, and durations.
type routeStats struct {
	buckets [12]atomic.Int64 // per latencyBuckets, the last one past them all (+Inf); not cumulative
	nanos   atomic.Int64
	codes   [600]atomic.Int64 // by status code; 0 for one out of range
}

// otherRoute labels requests no route of routes.go matched.
const otherRoute = "other"

// Begin counts a request being answered now; End, when it has been.
func (m *Metrics) Begin() { m.inFlight.Add(1) }

// End ends what Begin counted.
func (m *Metrics) End() { m.inFlight.Add(-1) }

// Observe counts one answered request of route pattern (the routes.go pattern that matched,
// "" for none) with its status and duration.
func (m *Metrics) Observe(pattern string, status int, took time.Duration) {
	if pattern == "" {
		pattern = otherRoute
	}
	v, ok := m.routes.Load(pattern)
	if !ok {
		v, _ = m.routes.LoadOrStore(pattern, &routeStats{})
	}
	rs := v.(*routeStats)
	secs := took.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, secs)
	rs.buckets[i].Add(1)
	rs.nanos.Add(int64(took))
	if status < 100 || status > 599 {
		status = 0
	}
	rs.codes[status].Add(1)
}

// family is one metric family: its name, type, help, and what writes its samples.
type family struct {
	name, typ, help string
	write           func(m *Metrics, ctx context.Context, e *expo)
	// has is false when this process has nothing to say of it (no Postgres, no PSI).
	has func(m *Metrics) bool
}

// families is the one table of what /metrics exposes. Names follow Prometheus' conventions
// (sitepulse_ prefix, _total counters, base units in _seconds and _bytes); label values are
// bounded: route patterns from routes.go, status codes, fixed outcomes, job kinds and states.
var families = []family{
	{"sitepulse_info", "gauge", "Always 1; role is this process's -role (web, worker or all), version its build's (sitepulse -version).",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_info", 1, "role", m.Role, "version", m.Version)
		}, nil},
	{"sitepulse_http_requests_in_flight", "gauge", "HTTP requests being answered now.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_http_requests_in_flight", float64(m.inFlight.Load()))
		}, nil},
	{"sitepulse_http_requests_total", "counter", "HTTP requests answered, by route pattern (routes.go; other when none matched) and status code.",
		func(m *Metrics, _ context.Context, e *expo) {
			m.eachRoute(func(route string, rs *routeStats) {
				for c := range rs.codes {
					if n := rs.codes[c].Load(); n > 0 {
						e.sample("sitepulse_http_requests_total", float64(n), "route", route, "code", strconv.Itoa(c))
					}
				}
			})
		}, nil},
	{"sitepulse_http_request_duration_seconds", "histogram", "Time to answer an HTTP request, by route pattern.",
		func(m *Metrics, _ context.Context, e *expo) {
			m.eachRoute(func(route string, rs *routeStats) {
				var cum int64
				for i, le := range latencyBuckets {
					cum += rs.buckets[i].Load()
					e.sample("sitepulse_http_request_duration_seconds_bucket", float64(cum), "route", route, "le", formatFloat(le))
				}
				cum += rs.buckets[len(latencyBuckets)].Load()
				e.sample("sitepulse_http_request_duration_seconds_bucket", float64(cum), "route", route, "le", "+Inf")
				e.sample("sitepulse_http_request_duration_seconds_sum", time.Duration(rs.nanos.Load()).Seconds(), "route", route)
				e.sample("sitepulse_http_request_duration_seconds_count", float64(cum), "route", route)
			})
		}, nil},
	{"sitepulse_jobs", "gauge", "Jobs in the queue (every process's), by kind and state: available (waiting or scheduled) or running.",
		func(m *Metrics, ctx context.Context, e *expo) {
			type series struct {
				kind  string
				state store.JobState
			}
			jobs := map[series]int{}
			for _, k := range m.JobKinds {
				for _, st := range jobStates {
					jobs[series{k, st}] = 0
				}
			}
			for _, f := range e.jobs {
				jobs[series{f.Kind, f.State}] += f.Jobs
			}
			keys := slices.SortedFunc(maps.Keys(jobs), func(a, b series) int {
				return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.state, b.state))
			})
			for _, k := range keys {
				e.sample("sitepulse_jobs", float64(jobs[k]), "kind", k.kind, "state", string(k.state))
			}
		}, hasJobs},
	{"sitepulse_jobs_oldest_runnable_age_seconds", "gauge", "Age of the oldest job that could run now but waits for a worker, by kind (0: none waits).",
		func(m *Metrics, ctx context.Context, e *expo) {
			now := m.now()
			oldest := map[string]float64{}
			for _, k := range m.JobKinds {
				oldest[k] = 0
			}
			for _, f := range e.jobs {
				if _, ok := oldest[f.Kind]; !ok {
					oldest[f.Kind] = 0
				}
				if !f.OldestRunnable.IsZero() {
					oldest[f.Kind] = max(oldest[f.Kind], now.Sub(f.OldestRunnable).Seconds())
				}
			}
			for _, k := range slices.Sorted(maps.Keys(oldest)) {
				e.sample("sitepulse_jobs_oldest_runnable_age_seconds", oldest[k], "kind", k)
			}
		}, hasJobs},
	{"sitepulse_scans_total", "counter", "Scans this process finished, by outcome: completed or failed.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.outcomes("sitepulse_scans_total", &m.Scans, scanOutcomes)
		}, nil},
	{"sitepulse_audits_total", "counter", "Page audits this process made, by outcome: ok (a page result) or failed (a page error).",
		func(m *Metrics, _ context.Context, e *expo) {
			e.outcomes("sitepulse_audits_total", &m.Audits, auditOutcomes)
		}, nil},
	{"sitepulse_deliveries_total", "counter", "Alert delivery attempts this process recorded, by outcome: delivered, pending (tried again later) or failed.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.outcomes("sitepulse_deliveries_total", &m.Deliveries, deliveryOutcomes)
		}, nil},
	{"sitepulse_psi_quota_used", "gauge", "PageSpeed Insights calls this process made in the current quota day (PSI_DAILY_LIMIT).",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_psi_quota_used", float64(e.psi.Used))
		}, hasPSI},
	{"sitepulse_psi_quota_remaining", "gauge", "PageSpeed Insights calls left to this process in the current quota day.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_psi_quota_remaining", float64(max(e.psi.Limit-e.psi.Used, 0)))
		}, hasPSI},
	{"sitepulse_psi_breaker_state", "gauge", "The PageSpeed Insights circuit breaker: 1 for its current state (closed, open or half_open), 0 for the others.",
		func(m *Metrics, _ context.Context, e *expo) {
			for _, st := range []string{"closed", "open", "half_open"} {
				v := 0.0
				if st == e.psi.Breaker {
					v = 1
				}
				e.sample("sitepulse_psi_breaker_state", v, "state", st)
			}
		}, hasPSI},
	{"sitepulse_db_connections_max", "gauge", "Postgres connections this process may open (DATABASE_MAX_CONNS).",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_db_connections_max", float64(e.db.MaxOpenConnections))
		}, hasDB},
	{"sitepulse_db_connections", "gauge", "Postgres connections open, by state: in_use or idle.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_db_connections", float64(e.db.InUse), "state", "in_use")
			e.sample("sitepulse_db_connections", float64(e.db.Idle), "state", "idle")
		}, hasDB},
	{"sitepulse_db_waits_total", "counter", "Times a request waited for a free Postgres connection.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_db_waits_total", float64(e.db.WaitCount))
		}, hasDB},
	{"sitepulse_db_wait_seconds_total", "counter", "Time spent waiting for a free Postgres connection.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_db_wait_seconds_total", e.db.WaitDuration.Seconds())
		}, hasDB},
	{"sitepulse_db_connections_closed_total", "counter", "Postgres connections closed by the pool, by reason: max_idle, max_idle_time or max_lifetime.",
		func(m *Metrics, _ context.Context, e *expo) {
			e.sample("sitepulse_db_connections_closed_total", float64(e.db.MaxIdleClosed), "reason", "max_idle")
			e.sample("sitepulse_db_connections_closed_total", float64(e.db.MaxIdleTimeClosed), "reason", "max_idle_time")
			e.sample("sitepulse_db_connections_closed_total", float64(e.db.MaxLifetimeClosed), "reason", "max_lifetime")
		}, hasDB},
	runtimeFamily("go_goroutines", "gauge", "Goroutines that currently exist.", "/sched/goroutines:goroutines"),
	runtimeFamily("go_heap_objects_bytes", "gauge", "Memory occupied by live heap objects and dead ones not yet freed.", "/memory/classes/heap/objects:bytes"),
	runtimeFamily("go_memory_mapped_bytes", "gauge", "All memory mapped by the Go runtime.", "/memory/classes/total:bytes"),
	runtimeFamily("go_gc_cycles_total", "counter", "Completed garbage collection cycles.", "/gc/cycles/total:gc-cycles"),
}

// runtimeFamily is a family read from one runtime/metrics sample, the same in every process.
func runtimeFamily(name, typ, help, sample string) family {
	return family{name, typ, help, func(_ *Metrics, _ context.Context, e *expo) { e.runtime(name, sample) }, nil}
}

func hasJobs(m *Metrics) bool { return m.Jobs != nil }
func hasPSI(m *Metrics) bool  { return m.PSI != nil }
func hasDB(m *Metrics) bool   { return m.DB != nil }

func (m *Metrics) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// eachRoute calls fn for every route pattern seen, in order.
func (m *Metrics) eachRoute(fn func(route string, rs *routeStats)) {
	var routes []string
	m.routes.Range(func(k, _ any) bool { routes = append(routes, k.(string)); return true })
	slices.Sort(routes)
	for _, r := range routes {
		v, _ := m.routes.Load(r)
		fn(r, v.(*routeStats))
	}
}

// runtimeSamples are the runtime/metrics the go_ families read, read once a scrape.
var runtimeSamples = []string{"/sched/goroutines:goroutines", "/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/gc/cycles/total:gc-cycles"}

// expo writes one scrape: the families in order, with what the scrape read once.
type expo struct {
	w       *strings.Builder
	jobs    []store.JobFigure
	psi     PSIFigures
	db      sql.DBStats
	runtime func(name, key string)
}

func (e *expo) sample(name string, v float64, labels ...string) {
	e.w.WriteString(name)
	if len(labels) > 0 {
		e.w.WriteByte('{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				e.w.WriteByte(',')
			}
			e.w.WriteString(labels[i])
			e.w.WriteString(`="`)
			e.w.WriteString(labelEscaper.Replace(labels[i+1]))
			e.w.WriteByte('"')
		}
		e.w.WriteByte('}')
	}
	e.w.WriteByte(' ')
	e.w.WriteString(formatFloat(v))
	e.w.WriteByte('\n')
}

func (e *expo) outcomes(name string, o *Outcomes, known []string) {
	o.each(known, func(outcome string, n int64) { e.sample(name, float64(n), "outcome", outcome) })
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Write writes every family in the Prometheus text exposition format (version 0.0.4). The store
// is read once (the queue's figures); a failed read leaves the job families without samples
// and is returned after the rest is written.
func (m *Metrics) Write(ctx context.Context, w io.Writer) error {
	e := &expo{w: &strings.Builder{}}
	var err error
	if m.Jobs != nil {
		if e.jobs, err = m.Jobs.JobFigures(ctx, m.now()); err != nil {
			err = fmt.Errorf("metrics: jobs: %w", err)
		}
	}
	if m.PSI != nil {
		e.psi = m.PSI()
	}
	if m.DB != nil {
		e.db = m.DB()
	}
	rs := make([]rtmetrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		rs[i].Name = name
	}
	rtmetrics.Read(rs)
	e.runtime = func(name, key string) {
		for _, s := range rs {
			if s.Name != key {
				continue
			}
			switch s.Value.Kind() {
			case rtmetrics.KindUint64:
				e.sample(name, float64(s.Value.Uint64()))
			case rtmetrics.KindFloat64:
				e.sample(name, s.Value.Float64())
			}
		}
	}
	for _, f := range families {
		if f.has != nil && !f.has(m) {
			continue
		}
		fmt.Fprintf(e.w, "# HELP %s %s\n# TYPE %s %s\n", f.name, helpEscaper.Replace(f.help), f.name, f.typ)
		f.write(m, ctx, e)
	}
	if _, werr := io.WriteString(w, e.w.String()); werr != nil {
		return werr
	}
	return err
}

// ServeHTTP answers a scrape: the metrics listener (METRICS_ADDR) serves it as it is; the main
// listener only behind METRICS_TOKEN (handlers' handleMetrics).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	m.Write(ctx, w) // a failed queue read leaves its families empty rather than the scrape failing
}

// Names are the families' names, in the table's order.
func Names() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}
