package handlers

import (
	"context"
	"net/http"
	"time"

	"sitepulse/store"
)

// accountMails bounds the account e-mails one address receives on requests anyone can make
// (sign-up links, reset links, the confirmation of an e-mail change): 3 at once, then one an
// hour, counted in the store so that every replica shares the count. Past it the request gets
// the same answer and no message is sent, so the form cannot be used to flood a mailbox.
var accountMails = store.LoginLimit{Burst: 3, Window: 24 * time.Hour, Every: time.Hour}

// takeMail takes one message of limit for the purpose and address from the store's count and
// answers whether there was one. A store failure is logged and sends nothing.
func (s *server) takeMail(r *http.Request, purpose, email string, limit store.LoginLimit) bool {
	ok, _, err := s.Accounts.TakeLoginAttempt(r.Context(), throttleKey(purpose, store.CanonicalEmail(email)), s.Now(), limit)
	if err != nil {
		s.Log.Warn("e-mail budget unavailable; the message is not sent", "purpose", purpose, "err", err)
		return false
	}
	return ok
}

// sendAccountMail sends a message that anyone's request may cause to the address, within the
// address's accountMails; past them it is dropped (logged without the address or the text).
func (s *server) sendAccountMail(r *http.Request, to, subject, body string) {
	if !s.takeMail(r, "account mail", to, accountMails) {
		s.Log.Info("account e-mail not sent: the address had its messages for now", "subject", subject)
		return
	}
	s.sendMail(r, to, subject, body)
}

// sendMail hands a message to Mail, which in the service enqueues it as a job on the queue
// (notify.AccountMails: retried, at least once, resumed by the next process after a shutdown),
// so the answer waits for one insert, never for the SMTP server. Without SMTP it is written to
// the log, body and links included, at INFO: the log is then the service's outbox, which keeps
// a laptop or a private instance usable (sign-up and reset links are read from it); NewHandler
// warns once at start that this is so. With SMTP a message's text is never logged.
func (s *server) sendMail(r *http.Request, to, subject, body string) {
	if s.Mail == nil {
		s.Log.Info("e-mail (SMTP_ADDR not set, so logged instead of sent)", "to", to, "subject", subject, "body", body)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := s.Mail(ctx, to, subject, body); err != nil {
		s.Log.Warn("an e-mail could not be queued; it is not sent", "subject", subject, "err", err)
	}
}
