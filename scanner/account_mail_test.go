package scanner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/notify"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestAccountMailSurvivesShutdown (issue 44 item 9): an account e-mail (here a reset link) is a
// job on the queue, not an untracked goroutine: the process that a SIGTERM catches mid-send
// releases it, and the next process sends it, body intact; the jobs table never holds the link.
func TestAccountMailSurvivesShutdown(t *testing.T) {
	onStores(t, storeTest{name: "a reset link caught by shutdown mid-send is sent by the next process", fn: testAccountMailSurvivesShutdown})
}

func testAccountMailSurvivesShutdown(t *testing.T, st store.Store) {
	r := newRig(t, st)
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	key := []byte(strings.Repeat("k", 32)) // AUTH_KEY, the same on both processes
	const link = "https://sitepulse.example/reset?token=secret-reset-token"
	to := "reset-" + store.NewID()[:8] + "@example.com"
	process := func(send notify.MailFunc) *Pool {
		am := &notify.AccountMails{Jobs: st, Key: key, Send: send, Log: log}
		p := NewPool(PoolConfig{Store: st, Log: log, Poll: 10 * time.Millisecond, Lease: time.Minute, Heartbeat: time.Second,
			ReleaseGrace: time.Second, Kinds: []KindWorker{Work(1, am.Work)}})
		p.Start()
		return p
	}
	// The first process's SMTP server takes the message and never answers: SIGTERM comes mid-send.
	started := make(chan struct{}, 1)
	first := process(func(ctx context.Context, _, _, _ string) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	jobs := &recordJobs{Store: st}
	enq := &notify.AccountMails{Jobs: jobs, Key: key, Log: log} // the web process's half
	if err := enq.Enqueue(context.Background(), to, "Choose a new SitePulse password", "Open "+link); err != nil {
		t.Fatal(err)
	}
	storetest.Recv(t, started, "the first process to begin sending")
	stopCtx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	first.Stop(stopCtx)
	cancel()

	type mail struct{ to, subject, body string }
	sent := make(chan mail, 2)
	second := process(func(_ context.Context, to, subject, body string) error {
		sent <- mail{to, subject, body}
		return nil
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		second.Stop(ctx)
	})
	got := storetest.Recv(t, sent, "the second process to send the message")
	if got.to != to || got.subject != "Choose a new SitePulse password" || got.body != "Open "+link {
		t.Errorf("sent %+v", got)
	}
	j, err := st.Job(context.Background(), jobs.last.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Kind != notify.KindAccountMail || strings.Contains(string(j.Args), "secret-reset-token") {
		t.Errorf("the job of kind %s holds the link: %s", j.Kind, j.Args)
	}
	t.Logf("the message's job: attempt %d, %s", j.Attempt, j.State)
}

// recordJobs remembers the job last enqueued.
type recordJobs struct {
	store.Store
	last store.Job
}

func (r *recordJobs) EnqueueJob(ctx context.Context, args store.JobArgs, runAt time.Time) (store.Job, error) {
	j, err := r.Store.EnqueueJob(ctx, args, runAt)
	r.last = j
	return j, err
}
