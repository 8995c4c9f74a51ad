package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"sitepulse/store"
)

// Live progress streams are capped per session and per process, and the streams of one scan
// share one poller that reads the scan every interval and fans each status out to them, so 200
// streams of a scan cost the store what one does.
const (
	maxStreamsPerSession = 10
	defaultMaxStreams    = 1000
)

// scanSub is one live stream's subscription to its scan's feed. C carries the latest status
// (an older one not yet read is replaced) and is closed after a terminal status, or when the
// scan can no longer be read. Close ends the subscription; call it once the stream ends.
type scanSub struct {
	C     <-chan scanEvent
	ch    chan scanEvent
	once  sync.Once
	close func()
}

func (s *scanSub) Close() { s.once.Do(s.close) }

// scanFeed is the poller of one scan and its subscribers.
type scanFeed struct {
	subs   map[*scanSub]struct{}
	last   *scanEvent
	cancel context.CancelFunc
	done   bool
}

// scanHub runs one scanFeed per scan with subscribers, and counts streams per session and in
// all.
type scanHub struct {
	read       func(ctx context.Context, userID, scanID string) (scanEvent, error)
	newTicker  func(time.Duration) (<-chan time.Time, func())
	every      time.Duration
	perSession int
	max        int
	log        *slog.Logger

	mu       sync.Mutex
	feeds    map[string]*scanFeed // by user id and scan id
	sessions map[string]int       // live streams by session
	total    int
}

func newScanHub(read func(context.Context, string, string) (scanEvent, error), newTicker func(time.Duration) (<-chan time.Time, func()),
	every time.Duration, perSession, max int) *scanHub {
	return &scanHub{read: read, newTicker: newTicker, every: every, perSession: perSession, max: max,
		log: slog.New(slog.DiscardHandler), feeds: map[string]*scanFeed{}, sessions: map[string]int{}}
}

// realTicker is time.NewTicker for scanHub.
func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// subscribe adds a stream of session to the feed of a user's scan, starting the feed when it
// has none. A nil subscription comes with the sentence that says which cap refused it.
func (h *scanHub) subscribe(session, userID, scanID string) (*scanSub, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[session] >= h.perSession {
		return nil, fmt.Sprintf("This browser already has %d live progress streams open, the most one session may have. Close another scan page, then reload this one.", h.perSession)
	}
	if h.total >= h.max {
		return nil, "The server is following as many live scans as it can at once. Reload this page in a minute."
	}
	key := userID + "/" + scanID
	f := h.feeds[key]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &scanFeed{subs: map[*scanSub]struct{}{}, cancel: cancel}
		h.feeds[key] = f
		go h.poll(ctx, key, f, userID, scanID)
	}
	ch := make(chan scanEvent, 1)
	sub := &scanSub{C: ch, ch: ch}
	if f.last != nil {
		ch <- *f.last
	}
	f.subs[sub] = struct{}{}
	h.sessions[session]++
	h.total++
	sub.close = func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.total--
		if h.sessions[session]--; h.sessions[session] <= 0 {
			delete(h.sessions, session)
		}
		delete(f.subs, sub)
		if len(f.subs) == 0 && !f.done { // the last stream left: stop polling
			f.done = true
			f.cancel()
			delete(h.feeds, key)
		}
	}
	return sub, ""
}

// poll reads the scan at once and then every tick, sending each status to every subscriber,
// until the scan ends, cannot be read, or the last subscriber leaves (ctx).
func (h *scanHub) poll(ctx context.Context, key string, f *scanFeed, userID, scanID string) {
	tick, stop := h.newTicker(h.every)
	defer stop()
	for {
		ev, err := h.read(ctx, userID, scanID)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrNotFound) {
			// The scan was deleted with its site: say so, and the pages stop listening.
			ev, err = scanEvent{ScanID: scanID, Status: scanDeleted, Message: "This site was deleted"}, nil
		}
		if err != nil {
			h.log.Error("scan events", "scan", scanID, "err", err)
		}
		end := err != nil || ev.Status.Terminal() || ev.Status == scanDeleted
		h.mu.Lock()
		if err == nil {
			f.last = &ev
			for sub := range f.subs {
				select { // keep only the latest status for a stream that has not read the last
				case <-sub.ch:
				default:
				}
				sub.ch <- ev
			}
		}
		if end {
			// The stream ends after a terminal status or the site's deletion; after a failing
			// store it ends without one, and the page's script reconnects.
			for sub := range f.subs {
				close(sub.ch)
			}
			f.subs, f.done = nil, true
			if h.feeds[key] == f {
				delete(h.feeds, key)
			}
		}
		h.mu.Unlock()
		if end {
			f.cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// readScanEvent reads what a progress stream shows of a user's scan.
func (s *server) readScanEvent(ctx context.Context, userID, scanID string) (scanEvent, error) {
	scan, err := s.Scans.Scan(ctx, userID, scanID)
	if err != nil {
		return scanEvent{}, err
	}
	ev := scanEvent{ScanID: scan.ID, Status: scan.Status, PagesDone: scan.PagesDone, PagesTotal: scan.PagesTotal}
	if scan.Status == store.StatusRunning {
		ev.AuditsInFlight = scan.AuditsInFlight
	}
	if !scan.Status.Terminal() {
		errs, err := s.Scans.PageErrors(ctx, userID, scan.ID)
		if err != nil {
			return ev, err
		}
		ev.PagesFailed, ev.Progress = len(errs), newProgress(scan, len(errs)).Line()
		if ev.Waiting, err = s.scanWait(ctx, userID, scan.ID); err != nil {
			return ev, err
		}
	}
	return ev, nil
}
