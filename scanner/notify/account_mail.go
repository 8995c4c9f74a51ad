package notify

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sitepulse/store"
)

// KindAccountMail is the kind of the jobs that send account e-mails: sign-up and reset links,
// e-mail changes, invitations, password and deletion notices. They go through the queue like the
// digest, so a message that a shutdown catches mid-send is sent by the next process (retried,
// at least once) instead of being lost with an untracked goroutine.
const KindAccountMail = "account_mail"

// AccountMailJob is the args of one account e-mail. Its body carries links that work once
// (reset, sign-up, invitation), so it is stored sealed (AES-GCM under a key derived from
// AUTH_KEY, bound to the recipient): the jobs table never holds a usable link.
type AccountMailJob struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Sealed  string `json:"sealed"`
}

// Kind is KindAccountMail.
func (AccountMailJob) Kind() string { return KindAccountMail }

// MaxAttempts lets an account e-mail outlast a short SMTP outage (attempt^4 s apart: about
// 20 minutes in all); a link is worth little later than that.
func (AccountMailJob) MaxAttempts() int { return 6 }

// AccountMails enqueues account e-mails and is their jobs' worker.
type AccountMails struct {
	Jobs interface {
		EnqueueJob(ctx context.Context, args store.JobArgs, runAt time.Time) (store.Job, error)
	}
	// Key is AUTH_KEY (the same on every replica, or a message enqueued by one process cannot
	// be opened by another); Send sends one message (SMTP).
	Key  []byte
	Send MailFunc
	Log  *slog.Logger
	Now  func() time.Time
}

func (a *AccountMails) aead() cipher.AEAD {
	m := hmac.New(sha256.New, a.Key)
	m.Write([]byte("sitepulse account mail"))
	block, _ := aes.NewCipher(m.Sum(nil)) // 32 bytes: AES-256
	aead, _ := cipher.NewGCM(block)
	return aead
}

// Enqueue stores the message as a job, its body sealed; it answers once the job is stored, so a
// request that enqueued its message can answer at once and lose nothing to a shutdown.
func (a *AccountMails) Enqueue(ctx context.Context, to, subject, body string) error {
	aead := a.aead()
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	sealed := base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(body), []byte(to)))
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	_, err := a.Jobs.EnqueueJob(ctx, AccountMailJob{To: to, Subject: subject, Sealed: sealed}, now())
	return err
}

// Work sends one account e-mail. A body that cannot be opened (AUTH_KEY differs between the
// process that enqueued it and this one) is given up with the reason; a failed send is retried.
func (a *AccountMails) Work(ctx context.Context, _ store.Job, args AccountMailJob) error {
	aead := a.aead()
	raw, err := base64.RawURLEncoding.DecodeString(args.Sealed)
	var body []byte
	if err == nil && len(raw) >= aead.NonceSize() {
		body, err = aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(args.To))
	} else if err == nil {
		err = errors.New("too short")
	}
	if err != nil {
		if a.Log != nil {
			a.Log.Warn("an account e-mail could not be opened (is AUTH_KEY the same on every process?); not sent", "subject", args.Subject)
		}
		return nil // no attempt can open it: giving up is the only answer
	}
	if err := a.Send(ctx, args.To, args.Subject, string(body)); err != nil {
		return fmt.Errorf("sending the account e-mail %q: %w", args.Subject, err)
	}
	return nil
}
