package postgres

import (
	"sync"
	"time"
)

// KeyCacheFor is how long a process answers an API key from what its lookup last found (issue
// 36): the budget check and MCP then send one statement a request, their read, as they did with
// named prepared statements, which no transaction pooler keeps. A key revoked, or whose maker
// left its workspace, is refused by every replica at most this long after: the bound is
// a second. The process that revokes a key forgets it at once. Only keys found are kept, so an
// unknown key costs its lookup every time, as before.
const KeyCacheFor = 500 * time.Millisecond

// maxCachedKeys bounds each key cache; a full cache starts over.
const maxCachedKeys = 10_000

// keyCache keeps what a key's lookup found, by key hash, with the time (the caller's now, the
// injectable clock) it was found at.
type keyCache[T any] struct {
	mu sync.Mutex
	m  map[string]cachedKey[T]
}

type cachedKey[T any] struct {
	id string // the key's id, for forget
	v  T
	at time.Time
}

// get is what the lookup of hash found less than KeyCacheFor before now (or after now: callers'
// clocks need not agree to the nanosecond).
func (c *keyCache[T]) get(hash string, now time.Time) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if d := now.Sub(e.at); !ok || d >= KeyCacheFor || d <= -KeyCacheFor {
		var zero T
		return zero, false
	}
	return e.v, true
}

func (c *keyCache[T]) put(hash, id string, v T, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedKeys {
		c.m = map[string]cachedKey[T]{}
	}
	c.m[hash] = cachedKey[T]{id: id, v: v, at: at}
}

// update replaces the value kept for hash, keeping its time: a key's recorded use.
func (c *keyCache[T]) update(hash string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[hash]; ok {
		e.v = v
		c.m[hash] = e
	}
}

// forget drops key id.
func (c *keyCache[T]) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if e.id == id {
			delete(c.m, h)
		}
	}
}

// clear drops every key kept.
func (c *keyCache[T]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

// forgetKeys drops every key this process keeps: a member left a workspace, or a workspace or an
// account went, and their keys stop working here at once (on other replicas within KeyCacheFor).
func (p *Store) forgetKeys() {
	p.apiKeys.clear()
	p.budgetKeys.clear()
}
