package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) CreateClient(ctx context.Context, c store.OAuthClient) error {
	_, err := p.db.ExecContext(ctx, `INSERT INTO oauth_clients
		(id, name, redirect_uris, grant_types, auth_method, secret_hash, scope, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, c.ID, c.Name, pq.StringArray(nonNil(c.RedirectURIs)),
		pq.StringArray(nonNil(c.GrantTypes)), c.AuthMethod, c.SecretHash, c.Scope, store.Now(c.CreatedAt))
	return pgErr("create client", err)
}

func (p *Store) SaveMetadataClient(ctx context.Context, c store.OAuthClient) error {
	if !store.IsMetadataClientID(c.ID) {
		return fmt.Errorf("client %s is a registered one: %w", c.ID, store.ErrConflict)
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO oauth_clients
		(id, name, redirect_uris, grant_types, auth_method, secret_hash, scope, created_at)
		VALUES ($1, $2, $3, $4, $5, '', $6, $7)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris,
			grant_types = EXCLUDED.grant_types, auth_method = EXCLUDED.auth_method, scope = EXCLUDED.scope
		WHERE oauth_clients.secret_hash = ''`, c.ID, c.Name, pq.StringArray(nonNil(c.RedirectURIs)),
		pq.StringArray(nonNil(c.GrantTypes)), c.AuthMethod, c.Scope, store.Now(c.CreatedAt))
	return pgErr("save metadata client", err)
}

func (p *Store) Client(ctx context.Context, clientID string) (store.OAuthClient, error) {
	var c store.OAuthClient
	var uris, grants pq.StringArray
	err := p.db.QueryRowContext(ctx, `SELECT id, name, redirect_uris, grant_types, auth_method, secret_hash, scope,
		created_at FROM oauth_clients WHERE id = $1`, clientID).
		Scan(&c.ID, &c.Name, &uris, &grants, &c.AuthMethod, &c.SecretHash, &c.Scope, &c.CreatedAt)
	c.RedirectURIs, c.GrantTypes, c.CreatedAt = uris, grants, c.CreatedAt.UTC()
	return c, pgErr("client", err)
}

func (p *Store) CreateAuthRequest(ctx context.Context, r store.AuthRequest) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		// Expired requests go, then all but the newest MaxPendingAuthRequests-1 live ones.
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_requests WHERE user_id = $1 AND (expires_at <= $2 OR id_hash IN
			(SELECT id_hash FROM oauth_requests WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC OFFSET $3))`,
			r.UserID, store.Now(r.CreatedAt), store.MaxPendingAuthRequests-1); err != nil {
			return pgErr("drop stale authorization requests", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_requests (id_hash, user_id, client_id, redirect_uri, state,
			code_challenge, scope, resource, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.IDHash, r.UserID, r.ClientID, r.RedirectURI, r.State, r.CodeChallenge, r.Scope, r.Resource,
			store.Now(r.CreatedAt), store.Now(r.ExpiresAt))
		return pgErr("create authorization request", err)
	})
}

func (p *Store) DeleteUnusedClients(ctx context.Context, createdBefore time.Time) (int, error) {
	res, err := p.db.ExecContext(ctx, `DELETE FROM oauth_clients c WHERE created_at < $1
		AND NOT EXISTS (SELECT 1 FROM oauth_requests WHERE client_id = c.id)
		AND NOT EXISTS (SELECT 1 FROM oauth_codes WHERE client_id = c.id)
		AND NOT EXISTS (SELECT 1 FROM oauth_tokens WHERE client_id = c.id)
		AND NOT EXISTS (SELECT 1 FROM oauth_consents WHERE client_id = c.id)`, store.Now(createdBefore))
	if err != nil {
		return 0, pgErr("delete unused clients", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (p *Store) TakeAuthRequest(ctx context.Context, idHash, userID string, now time.Time) (store.AuthRequest, error) {
	if !uuidOK(userID) {
		return store.AuthRequest{}, store.NotFound("authorization request")
	}
	var r store.AuthRequest
	err := p.db.QueryRowContext(ctx, `DELETE FROM oauth_requests WHERE id_hash = $1 AND user_id = $2
		RETURNING id_hash, user_id, client_id, redirect_uri, state, code_challenge, scope, resource, created_at, expires_at`,
		idHash, userID).Scan(&r.IDHash, &r.UserID, &r.ClientID, &r.RedirectURI, &r.State, &r.CodeChallenge,
		&r.Scope, &r.Resource, &r.CreatedAt, &r.ExpiresAt)
	if err != nil {
		return store.AuthRequest{}, pgErr("authorization request", err)
	}
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	if !r.ExpiresAt.After(now) {
		return store.AuthRequest{}, store.NotFound("authorization request")
	}
	return r, nil
}

func (p *Store) CreateCode(ctx context.Context, c store.AuthCode) error {
	_, err := p.db.ExecContext(ctx, `INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri,
		code_challenge, scope, resource, family_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, c.CodeHash, c.ClientID, c.UserID, c.RedirectURI,
		c.CodeChallenge, c.Scope, c.Resource, c.FamilyID, store.Now(c.CreatedAt), store.Now(c.ExpiresAt))
	return pgErr("create code", err)
}

func (p *Store) Code(ctx context.Context, codeHash string) (store.AuthCode, error) {
	var c store.AuthCode
	var used sql.NullTime
	err := p.db.QueryRowContext(ctx, `SELECT code_hash, client_id, user_id, redirect_uri, code_challenge, scope,
		resource, family_id, created_at, expires_at, used_at FROM oauth_codes WHERE code_hash = $1`, codeHash).
		Scan(&c.CodeHash, &c.ClientID, &c.UserID, &c.RedirectURI, &c.CodeChallenge, &c.Scope, &c.Resource,
			&c.FamilyID, &c.CreatedAt, &c.ExpiresAt, &used)
	c.CreatedAt, c.ExpiresAt, c.UsedAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC(), timePtr(used)
	return c, pgErr("code", err)
}

func (p *Store) RedeemCode(ctx context.Context, codeHash string, now time.Time, tokens ...store.OAuthToken) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		// The row lock makes a concurrent redemption wait for this one to commit, then find
		// used_at set.
		res, err := tx.ExecContext(ctx, `UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL`,
			codeHash, store.Now(now))
		if err := affected(res, err, store.ErrConflict); err != nil {
			if err != store.ErrConflict {
				return pgErr("redeem code", err)
			}
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM oauth_codes WHERE code_hash = $1`, codeHash).Scan(&one); err != nil {
				return pgErr("code", err)
			}
			return fmt.Errorf("code already used: %w", store.ErrConflict)
		}
		return insertTokens(ctx, tx, tokens)
	})
}

func (p *Store) CreateTokens(ctx context.Context, tokens ...store.OAuthToken) error {
	return p.tx(ctx, func(tx *sql.Tx) error { return insertTokens(ctx, tx, tokens) })
}

func insertTokens(ctx context.Context, tx *sql.Tx, tokens []store.OAuthToken) error {
	for _, t := range tokens {
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_tokens (token_hash, kind, client_id, user_id, family_id,
			scope, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.TokenHash, t.Kind, t.ClientID,
			t.UserID, t.FamilyID, t.Scope, store.Now(t.CreatedAt), store.Now(t.ExpiresAt))
		if err != nil {
			return pgErr("create token", err)
		}
	}
	return nil
}

func (p *Store) Token(ctx context.Context, tokenHash string) (store.OAuthToken, error) {
	var t store.OAuthToken
	var used, revoked sql.NullTime
	err := p.db.QueryRowContext(ctx, `SELECT token_hash, kind, client_id, user_id, family_id, scope, created_at,
		expires_at, used_at, revoked_at FROM oauth_tokens WHERE token_hash = $1`, tokenHash).
		Scan(&t.TokenHash, &t.Kind, &t.ClientID, &t.UserID, &t.FamilyID, &t.Scope, &t.CreatedAt, &t.ExpiresAt,
			&used, &revoked)
	t.CreatedAt, t.ExpiresAt, t.UsedAt, t.RevokedAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC(), timePtr(used), timePtr(revoked)
	return t, pgErr("token", err)
}

func (p *Store) RotateRefresh(ctx context.Context, oldHash string, now time.Time, successors ...store.OAuthToken) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET used_at = $2 WHERE token_hash = $1
			AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL`, oldHash, store.Now(now))
		if err := affected(res, err, store.ErrConflict); err != nil {
			if err != store.ErrConflict {
				return pgErr("rotate refresh token", err)
			}
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM oauth_tokens WHERE token_hash = $1 AND kind = 'refresh'`,
				oldHash).Scan(&one); err != nil {
				return pgErr("refresh token", err)
			}
			return fmt.Errorf("refresh token already used: %w", store.ErrConflict)
		}
		return insertTokens(ctx, tx, successors)
	})
}

func (p *Store) RevokeToken(ctx context.Context, tokenHash string, now time.Time) error {
	_, err := p.db.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $2 WHERE revoked_at IS NULL AND (
		token_hash = $1 OR family_id = (SELECT family_id FROM oauth_tokens WHERE token_hash = $1 AND kind = 'refresh'))`,
		tokenHash, store.Now(now))
	return pgErr("revoke token", err)
}

func (p *Store) RevokeFamily(ctx context.Context, familyID string, now time.Time) error {
	if !uuidOK(familyID) {
		return nil
	}
	_, err := p.db.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL`,
		familyID, store.Now(now))
	return pgErr("revoke family", err)
}

func (p *Store) SaveConsent(ctx context.Context, c store.Consent) error {
	_, err := p.db.ExecContext(ctx, `INSERT INTO oauth_consents (user_id, client_id, scope, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, client_id) DO UPDATE SET scope = EXCLUDED.scope,
		created_at = EXCLUDED.created_at`, c.UserID, c.ClientID, c.Scope, store.Now(c.CreatedAt))
	return pgErr("save consent", err)
}

func (p *Store) Consents(ctx context.Context, userID string) ([]store.Consent, error) {
	if !uuidOK(userID) {
		return []store.Consent{}, nil
	}
	return queryAll(ctx, p.db, "consents", func(r rowScanner) (c store.Consent, err error) {
		err = r.Scan(&c.UserID, &c.ClientID, &c.ClientName, &c.Scope, &c.CreatedAt)
		c.CreatedAt = c.CreatedAt.UTC()
		return c, err
	}, `SELECT c.user_id, c.client_id, k.name, c.scope, c.created_at FROM oauth_consents c
		JOIN oauth_clients k ON k.id = c.client_id WHERE c.user_id = $1 ORDER BY c.created_at DESC, c.client_id`, userID)
}

func (p *Store) RevokeConsent(ctx context.Context, userID, clientID string, now time.Time) error {
	if !uuidOK(userID) {
		return store.NotFound("consent")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM oauth_consents WHERE user_id = $1 AND client_id = $2`, userID, clientID)
		if err := affected(res, err, sql.ErrNoRows); err != nil {
			return pgErr("consent", err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $3
			WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL`, userID, clientID, store.Now(now))
		return pgErr("revoke tokens", err)
	})
}

func (p *Store) EndGrantsSince(ctx context.Context, userID string, since, now time.Time) ([]store.Consent, error) {
	ended := []store.Consent{}
	if !uuidOK(userID) {
		return ended, nil
	}
	err := p.tx(ctx, func(tx *sql.Tx) error {
		// The consents given since, forgotten; then every token of their clients, and of each
		// family begun since, revoked. The apps ended are named from their clients.
		rows, err := tx.QueryContext(ctx, `WITH gone AS (
				DELETE FROM oauth_consents WHERE user_id = $1 AND created_at >= $2 RETURNING client_id, scope, created_at),
			fresh AS (
				SELECT family_id, client_id FROM oauth_tokens WHERE user_id = $1 GROUP BY family_id, client_id
					HAVING min(created_at) >= $2 AND bool_or(revoked_at IS NULL)),
			revoked AS (
				UPDATE oauth_tokens SET revoked_at = $3 WHERE user_id = $1 AND revoked_at IS NULL
					AND (client_id IN (SELECT client_id FROM gone) OR family_id IN (SELECT family_id FROM fresh))
				RETURNING client_id)
			SELECT k.id, k.name, COALESCE(g.scope, ''), COALESCE(g.created_at, $3)
			FROM oauth_clients k LEFT JOIN gone g ON g.client_id = k.id
			WHERE k.id IN (SELECT client_id FROM gone UNION SELECT client_id FROM fresh)
			ORDER BY 4 DESC, k.id`, userID, store.Now(since), store.Now(now))
		if err != nil {
			return pgErr("end grants", err)
		}
		defer rows.Close()
		for rows.Next() {
			c := store.Consent{UserID: userID}
			if err := rows.Scan(&c.ClientID, &c.ClientName, &c.Scope, &c.CreatedAt); err != nil {
				return pgErr("end grants", err)
			}
			c.CreatedAt = c.CreatedAt.UTC()
			ended = append(ended, c)
		}
		return pgErr("end grants", rows.Err())
	})
	return ended, err
}
