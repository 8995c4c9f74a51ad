package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) RecordPublish(ctx context.Context, pub store.Publish) error {
	if !uuidOK(pub.ID, pub.SiteID) || pub.ScanID != "" && !uuidOK(pub.ScanID) {
		return store.NotFound("site")
	}
	pub.Normalize()
	// The scan, when named, must be the site's: a publish never points into another site.
	res, err := p.db.ExecContext(ctx, `INSERT INTO publishes (id, site_id, platform_event_id, published_by, published_on, domains, scan_id, commit_sha)
		SELECT $1, s.id, $3, $4, $5, $6, $7, $8 FROM sites s
		WHERE s.id = $2 AND ($7::uuid IS NULL OR EXISTS (SELECT 1 FROM scans WHERE id = $7 AND site_id = s.id))`,
		pub.ID, pub.SiteID, pub.PlatformEventID, pub.PublishedBy, store.Now(pub.PublishedOn), pq.StringArray(nonNil(pub.Domains)), nullString(pub.ScanID), pub.Commit)
	return pgErr("record publish", affected(res, err, store.NotFound("site")))
}

const publishCols = `p.id, p.site_id, p.platform_event_id, p.published_by, p.published_on, p.domains, coalesce(p.scan_id::text, ''), p.commit_sha`

func scanPublish(r rowScanner) (store.Publish, error) {
	var pub store.Publish
	var domains pq.StringArray
	err := r.Scan(&pub.ID, &pub.SiteID, &pub.PlatformEventID, &pub.PublishedBy, &pub.PublishedOn, &domains, &pub.ScanID, &pub.Commit)
	pub.Domains, pub.PublishedOn = []string(domains), pub.PublishedOn.UTC()
	return pub, err
}

func (p *Store) Publishes(ctx context.Context, userID, siteID string, since time.Time, limit int) ([]store.Publish, error) {
	if err := p.owns(ctx, p.db, userID, siteID); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, p.db, "publishes", scanPublish, `SELECT * FROM (
		SELECT `+publishCols+` FROM publishes p WHERE p.site_id = $1 AND p.published_on >= $2
		ORDER BY p.published_on DESC, p.id DESC LIMIT $3) latest ORDER BY published_on, id`,
		siteID, store.Now(since), limit)
	if out == nil && err == nil {
		out = []store.Publish{}
	}
	return out, err
}

func (p *Store) PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error) {
	out := map[string]store.Publish{}
	ids := []string{}
	for _, id := range scanIDs {
		if uuidOK(id) {
			ids = append(ids, id)
		}
	}
	if !uuidOK(userID) || len(ids) == 0 {
		return out, nil
	}
	list, err := queryAll(ctx, p.db, "publishes of scans", scanPublish, `SELECT `+publishCols+` FROM publishes p
		JOIN sites s ON s.id = p.site_id WHERE `+readable("s.workspace_id", 1)+` AND p.scan_id = ANY($2::uuid[])`, userID, pq.StringArray(ids))
	for _, pub := range list {
		out[pub.ScanID] = pub
	}
	return out, err
}

func (p *Store) EnqueueFollowUp(ctx context.Context, siteID string, runAt time.Time) (store.FollowUp, error) {
	if !uuidOK(siteID) {
		return "", store.NotFound("site")
	}
	var did store.FollowUp
	err := p.tx(ctx, func(tx *sql.Tx) error {
		var workspaceID string
		var queued bool // the site's scan in flight has not started: it audits the publish itself
		err := tx.QueryRowContext(ctx, `SELECT s.workspace_id, EXISTS (SELECT 1 FROM scans c WHERE c.site_id = s.id AND c.status = 'queued')
			FROM sites s WHERE s.id = $1`, siteID).Scan(&workspaceID, &queued)
		if err != nil {
			return pgErr("follow-up: site", err)
		}
		if queued {
			did = store.FollowUpCovered
			return nil
		}
		args, _ := json.Marshal(store.FollowUpJob{SiteID: siteID, WorkspaceID: workspaceID})
		// The unique index jobs_one_follow_up makes a second waiting one conflict.
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs (kind, args, state, max_attempts, run_at, created_at, workspace_id)
			VALUES ($1, $2, 'available', $3, $4, $5, $6)
			ON CONFLICT ((args->>'siteId')) WHERE kind = 'followup' AND state = 'available' DO NOTHING`,
			store.KindFollowUp, string(args), store.MaxAttemptsOf(store.FollowUpJob{}), store.Now(runAt), store.Now(time.Now()), workspaceID)
		if err != nil {
			return pgErr("enqueue follow-up", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			did = store.FollowUpJoined
			return nil
		}
		did = store.FollowUpQueued
		_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, store.KindFollowUp)
		return pgErr("notify", err)
	})
	return did, err
}
