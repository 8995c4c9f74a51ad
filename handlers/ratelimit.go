package handlers

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limiter is a token bucket per key (an address or an account): burst events at once, then one
// every interval. It lives in the process: each replica throttles on its own, which bounds
// guessing to replicas x burst and needs no shared state.
type limiter struct {
	mu       sync.Mutex
	burst    float64
	interval time.Duration
	now      func() time.Time
	buckets  map[string]*bucket
	sweep    time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(burst int, interval time.Duration, now func() time.Time) *limiter {
	return &limiter{burst: float64(burst), interval: interval, now: now, buckets: map[string]*bucket{}}
}

// allow takes a token for key and answers whether there was one; when not, it says how long
// until there is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.sweep) > 10*time.Minute {
		l.sweepLocked(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.interval))
	b.at = now
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) * float64(l.interval))
		return false, wait
	}
	b.tokens--
	return true, 0
}

// refund gives back a token taken by allow (an attempt that turned out fine).
func (l *limiter) refund(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[key]; ok {
		b.tokens = min(l.burst, b.tokens+1)
	}
}

// forget resets key's bucket to full.
func (l *limiter) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.buckets, key)
}

// sweepLocked forgets buckets that have refilled, so the map does not grow without bound.
func (l *limiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(l.interval) >= l.burst {
			delete(l.buckets, k)
		}
	}
	l.sweep = now
}

// clientIP is the request's peer address without its port. SitePulse does not trust
// X-Forwarded-For: behind a proxy, every client would otherwise choose its own address.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
