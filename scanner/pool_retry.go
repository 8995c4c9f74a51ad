package scanner

import (
	"context"
	"log/slog"
	"time"

	"sitepulse/store"
)

// whileUnavailable runs op, and runs it again while it fails because the database cannot be
// reached (store.ErrUnavailable: a restart, a failover), with a backoff from 100 ms to 2 s, for
// at most half a lease. So a database restart in the middle of a scan costs a pause, not the
// attempt, nor the PSI calls already made: database/sql reconnects on the next try. A job's
// lease is not refreshed meanwhile, hence the bound: after Lease/2 the attempt fails as before
// and the job is retried, or rescued once the database is back.
func (p *Pool) whileUnavailable(ctx context.Context, log *slog.Logger, what string, op func(context.Context) error) error {
	giveUp := time.Now().Add(p.cfg.Lease / 2)
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		err := op(ctx)
		if err == nil || store.Classify(err) != store.ErrUnavailable || ctx.Err() != nil || time.Now().Add(wait).After(giveUp) {
			if err == nil && try > 1 {
				log.Info("scanner: database back", "op", what, "tries", try)
			}
			return err
		}
		if try == 1 {
			log.Warn("scanner: database unavailable; retrying", "op", what, "err", err)
		}
		if sleepCtx(ctx, wait) != nil {
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}
