package postgres

import (
	"context"
	"database/sql"
	"sync"
)

// preparedStmts holds the statements on the hot path of every API request, prepared once per
// pool (database/sql re-prepares them on each connection as needed). A prepared statement skips
// parsing and, after a few runs, planning: for the budget check's one statement planning took
// longer than executing it.
type preparedStmts struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// prepared returns query as a prepared statement of the pool.
func (p *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	p.prep.mu.Lock()
	defer p.prep.mu.Unlock()
	if st, ok := p.prep.stmts[query]; ok {
		return st, nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if p.prep.stmts == nil {
		p.prep.stmts = map[string]*sql.Stmt{}
	}
	p.prep.stmts[query] = st
	return st, nil
}
