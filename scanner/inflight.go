package scanner

import (
	"context"
	"time"

	"sitepulse/store"

	"sitepulse/scanner/psi"
)

// inFlightEvery is how often a scan's audits in flight are written for its page, when they changed.
const inFlightEvery = time.Second

// showInFlight writes the scan's audits in flight for its page every inFlightEvery while they
// change, until the returned stop, which writes 0 when the last write was not. A failed write
// is left to the next: the heartbeat is what notices a lost lease.
func (p *Pool) showInFlight(ctx context.Context, lease store.Lease, share *psi.Share) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(inFlightEvery)
		defer t.Stop()
		shown := 0
		write := func(n int) {
			if n != shown && p.cfg.Store.SetAuditsInFlight(ctx, lease, n) == nil {
				shown = n
			}
		}
		for {
			select {
			case <-t.C:
				write(share.InFlight())
			case <-quit:
				write(0)
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}
