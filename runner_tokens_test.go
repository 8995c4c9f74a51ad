package main

import (
	"context"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The operator's runner tokens: made once shown, listed, found by hash as a token of no
// workspace (its runners serve every workspace), revoked by id.
func TestRunnerTokenCommand(t *testing.T) {
	st, dsn := storetest.PostgresDSN(t)
	env := map[string]string{"DATABASE_URL": dsn}
	withDirect(env)
	getenv := func(k string) string { return env[k] }
	cmd := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(context.Background(), append([]string{"runner-token"}, args...), getenv, &out)
		return out.String(), err
	}
	out, err := cmd("create", "fleet")
	if err != nil {
		t.Fatal(err)
	}
	var secret string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "rnr_") {
			secret = f
		}
	}
	tok, err := st.RunnerTokenByHash(context.Background(), store.HashSecret(secret))
	if err != nil || !tok.Operator() || tok.Name != "fleet" {
		t.Fatalf("the printed token %q: %+v %v (output %q)", secret, tok, err, out)
	}
	if out, err := cmd("list"); err != nil || !strings.Contains(out, tok.ID) || strings.Contains(out, secret) {
		t.Errorf("list: %q %v", out, err)
	}
	if _, err := cmd("revoke", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RunnerTokenByHash(context.Background(), store.HashSecret(secret)); err == nil {
		t.Error("the revoked token is still found")
	}
	if _, err := cmd("revoke", tok.ID); err == nil {
		t.Error("revoking twice succeeded")
	}
	if _, err := cmd("rotate"); err == nil {
		t.Error("an unknown subcommand succeeded")
	}
}
