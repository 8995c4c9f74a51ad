package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// CreateChannel counts after locking the workspace's row, as CreateSiteWithin does; the user
// must be an owner or editor of it.
func (p *Store) CreateChannel(ctx context.Context, userID string, c store.Channel) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !uuidOK(c.ID, c.WorkspaceID, userID) {
		return store.NotFound("workspace")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM channels WHERE workspace_id = w.id) FROM workspaces w
			WHERE w.id = $1 AND `+writable("w.id", 2)+` FOR UPDATE OF w`, c.WorkspaceID, userID).Scan(&n)
		if err != nil {
			return pgErr("lock workspace", err)
		}
		if n >= store.MaxChannelsPerWorkspace {
			return fmt.Errorf("%d channels: %w", n, store.ErrLimit)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO channels (id, workspace_id, kind, name, url_sealed, secret_sealed, events, site_ids, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[], $9)`, c.ID, c.WorkspaceID, c.Kind, c.Name, c.URLSealed, c.SecretSealed,
			pq.StringArray(c.Events), pq.StringArray(c.SiteIDs), store.Now(c.CreatedAt))
		return pgErr("create channel", err)
	})
}

const channelCols = `id, workspace_id, kind, name, url_sealed, secret_sealed, events, site_ids::text[], created_at, failing_since`

func scanChannel(r rowScanner) (store.Channel, error) {
	var c store.Channel
	var events, sites pq.StringArray
	var failing sql.NullTime
	err := r.Scan(&c.ID, &c.WorkspaceID, &c.Kind, &c.Name, &c.URLSealed, &c.SecretSealed, &events, &sites, &c.CreatedAt, &failing)
	c.Events, c.SiteIDs, c.CreatedAt = nonNil(events), nonNil(sites), c.CreatedAt.UTC()
	if failing.Valid {
		t := failing.Time.UTC()
		c.FailingSince = &t
	}
	return c, err
}

func (p *Store) ChannelsIn(ctx context.Context, userID, workspaceID string) ([]store.Channel, error) {
	if !uuidOK(userID, workspaceID) {
		return []store.Channel{}, nil
	}
	out, err := queryAll(ctx, p.db, "channels", scanChannel, `SELECT `+channelCols+` FROM channels
		WHERE workspace_id = $1 AND `+readable("workspace_id", 2)+` ORDER BY created_at, id`, workspaceID, userID)
	if out == nil && err == nil {
		out = []store.Channel{}
	}
	return out, err
}

func (p *Store) WorkspaceChannels(ctx context.Context, workspaceID string) ([]store.Channel, error) {
	if !uuidOK(workspaceID) {
		return []store.Channel{}, nil
	}
	out, err := queryAll(ctx, p.db, "channels", scanChannel, `SELECT `+channelCols+` FROM channels WHERE workspace_id = $1 ORDER BY created_at, id`, workspaceID)
	if out == nil && err == nil {
		out = []store.Channel{}
	}
	return out, err
}

func (p *Store) Channel(ctx context.Context, workspaceID, channelID string) (store.Channel, error) {
	if !uuidOK(workspaceID, channelID) {
		return store.Channel{}, store.NotFound("channel")
	}
	c, err := scanChannel(p.db.QueryRowContext(ctx, `SELECT `+channelCols+` FROM channels WHERE id = $1 AND workspace_id = $2`, channelID, workspaceID))
	return c, pgErr("channel", err)
}

func (p *Store) DeleteChannel(ctx context.Context, userID, workspaceID, channelID string) error {
	if !uuidOK(userID, workspaceID, channelID) {
		return store.NotFound("channel")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM channels WHERE id = $1 AND workspace_id = $2 AND `+writable("workspace_id", 3),
		channelID, workspaceID, userID)
	return pgErr("delete channel", affected(res, err, store.NotFound("channel")))
}

func (p *Store) RecordDelivery(ctx context.Context, workspaceID string, d store.Delivery) error {
	if !uuidOK(workspaceID, d.ChannelID, d.ID) {
		return store.NotFound("channel")
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO deliveries (id, channel_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at)
		SELECT $1, c.id, $4, $5, $6, $7, $8, $9, $10, $11 FROM channels c WHERE c.id = $2 AND c.workspace_id = $3
		ON CONFLICT (channel_id, event_id) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
			next_at = excluded.next_at, last_status = excluded.last_status, last_error = excluded.last_error`,
		d.ID, d.ChannelID, workspaceID, d.EventID, d.EventType, d.State, d.Attempts, nullTime(d.NextAt), d.LastStatus, d.LastError, store.Now(d.CreatedAt))
	return pgErr("record delivery", affected(res, err, store.NotFound("channel")))
}

func (p *Store) DeliveriesOf(ctx context.Context, userID, workspaceID, channelID string, limit int) ([]store.Delivery, error) {
	if !uuidOK(userID, workspaceID, channelID) {
		return nil, store.NotFound("channel")
	}
	var one int
	if err := p.db.QueryRowContext(ctx, `SELECT 1 FROM channels WHERE id = $1 AND workspace_id = $2 AND `+readable("workspace_id", 3),
		channelID, workspaceID, userID).Scan(&one); err != nil {
		return nil, pgErr("channel", err)
	}
	out, err := queryAll(ctx, p.db, "deliveries", func(r rowScanner) (store.Delivery, error) {
		var d store.Delivery
		var next sql.NullTime
		err := r.Scan(&d.ID, &d.ChannelID, &d.EventID, &d.EventType, &d.State, &d.Attempts, &next, &d.LastStatus, &d.LastError, &d.CreatedAt)
		d.CreatedAt = d.CreatedAt.UTC()
		if next.Valid {
			t := next.Time.UTC()
			d.NextAt = &t
		}
		return d, err
	}, `SELECT id, channel_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at
		FROM deliveries WHERE channel_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, channelID, limit)
	if out == nil && err == nil {
		out = []store.Delivery{}
	}
	return out, err
}

func (p *Store) SwapBudgetState(ctx context.Context, siteID, scanID string, t store.Triage) (bool, error) {
	if !uuidOK(siteID, scanID) {
		return false, store.NotFound("site")
	}
	var was bool
	err := p.db.QueryRowContext(ctx, `WITH old AS (SELECT id, budgets_broken, budgets_were_broken,
			budgets_scan_id IS NOT DISTINCT FROM $3::uuid AS again FROM sites WHERE id = $1 FOR UPDATE)
		UPDATE sites s SET budgets_broken = CASE WHEN old.again THEN old.budgets_broken ELSE $2 END,
			budgets_were_broken = CASE WHEN old.again THEN old.budgets_were_broken ELSE old.budgets_broken END,
			budgets_scan_id = $3,
			broken_budgets = CASE WHEN old.again THEN s.broken_budgets ELSE $4 END,
			regressions = CASE WHEN old.again THEN s.regressions ELSE $5 END
		FROM old WHERE s.id = old.id
		RETURNING CASE WHEN old.again THEN old.budgets_were_broken ELSE old.budgets_broken END`,
		siteID, t.BudgetsBroken, scanID, pq.StringArray(nonNil(t.Broken)), t.Regressions).Scan(&was)
	return was, pgErr("swap budget state", err)
}

func (p *Store) SetChannelFailing(ctx context.Context, workspaceID, channelID string, since *time.Time) (bool, error) {
	if !uuidOK(workspaceID, channelID) {
		return false, store.NotFound("channel")
	}
	// The old value is read under the row's lock, so of deliveries failing together one turns it.
	var turned bool
	err := p.db.QueryRowContext(ctx, `WITH old AS (SELECT id, failing_since FROM channels WHERE id = $1 AND workspace_id = $2 FOR UPDATE)
		UPDATE channels c SET failing_since = CASE WHEN $3::timestamptz IS NULL THEN NULL ELSE coalesce(old.failing_since, $3) END
		FROM old WHERE c.id = old.id
		RETURNING old.failing_since IS NULL AND $3::timestamptz IS NOT NULL`, channelID, workspaceID, nullTime(since)).Scan(&turned)
	return turned, pgErr("set channel failing", err)
}

func (p *Store) PlanDeliveries(ctx context.Context, workspaceID string, ds []store.Delivery, jobs []store.JobArgs, now time.Time) (int, error) {
	if len(ds) != len(jobs) {
		return 0, fmt.Errorf("plan deliveries: %d deliveries, %d jobs", len(ds), len(jobs))
	}
	if !uuidOK(workspaceID) {
		return 0, nil
	}
	n := 0
	err := p.tx(ctx, func(tx *sql.Tx) error {
		n = 0
		for i, d := range ds {
			if !uuidOK(d.ChannelID, d.ID) {
				continue
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO deliveries (id, channel_id, event_id, event_type, state, attempts, created_at)
				SELECT $1, c.id, $4, $5, 'pending', 0, $6 FROM channels c WHERE c.id = $2 AND c.workspace_id = $3
				ON CONFLICT (channel_id, event_id) DO NOTHING`,
				d.ID, d.ChannelID, workspaceID, d.EventID, d.EventType, store.Now(d.CreatedAt))
			if err != nil {
				return pgErr("plan delivery", err)
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue // planned before, or its channel is gone
			}
			if _, err := insertJob(ctx, tx, jobs[i].Kind(), jobs[i], "", now, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
