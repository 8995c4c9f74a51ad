package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/lib/pq"
)

// fakeConnector refuses its first refusals connections with err, then connects.
type fakeConnector struct {
	refusals, calls int
	err             error
}

func (f *fakeConnector) Connect(context.Context) (driver.Conn, error) {
	f.calls++
	if f.calls <= f.refusals {
		return nil, f.err
	}
	return nil, nil
}
func (f *fakeConnector) Driver() driver.Driver { return nil }

// TestConnectWaitsForRoom: a connection Postgres refuses as one too many (53300) is tried again,
// with growing pauses, until it connects or the patience runs out; any other error is returned
// at once. A closed connection's backend still counts against the limit until it has exited,
// which on a loaded server takes a while (issue 24's "too many clients" under -race).
func TestConnectWaitsForRoom(t *testing.T) {
	tooMany := &pq.Error{Code: "53300", Message: "too many connections for role"}
	for _, tt := range []struct {
		name     string
		fake     *fakeConnector
		wantErr  bool
		wantCall int
	}{
		{"two refusals, then a connection", &fakeConnector{refusals: 2, err: tooMany}, false, 3},
		{"refused past the patience", &fakeConnector{refusals: 100, err: tooMany}, true, 9},
		{"another error is not retried", &fakeConnector{refusals: 100, err: errors.New("password authentication failed")}, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var waited time.Duration
			w := waitingConnector{Connector: tt.fake, patience: 5 * time.Second,
				wait: func(_ context.Context, d time.Duration) error { waited += d; return nil }}
			_, err := w.Connect(context.Background())
			if (err != nil) != tt.wantErr || tt.fake.calls != tt.wantCall {
				t.Errorf("err %v after %d calls; want error %v after %d", err, tt.fake.calls, tt.wantErr, tt.wantCall)
			}
			if waited > 5*time.Second {
				t.Errorf("waited %v, more than the patience", waited)
			}
		})
	}
}
