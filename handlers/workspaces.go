package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sitepulse/securitylog"
	"sitepulse/store"
)

// WorkspaceStore is what the workspace pages read and write: members and roles, invitations, the
// activity log, and what the workspace page shows of its sites and platform connection.
type WorkspaceStore interface {
	CreateWorkspace(ctx context.Context, w store.Workspace, ownerID string, max int) error
	DeleteWorkspace(ctx context.Context, userID, workspaceID string) error
	Members(ctx context.Context, workspaceID string) ([]store.Member, error)
	SetRole(ctx context.Context, workspaceID, userID string, role store.Role) error
	RemoveMember(ctx context.Context, workspaceID, userID string) error
	SetMemberNotify(ctx context.Context, workspaceID, userID string, on bool) error
	CreateInvitation(ctx context.Context, inv store.Invitation) error
	Invitations(ctx context.Context, workspaceID string, now time.Time) ([]store.Invitation, error)
	InvitationByHash(ctx context.Context, tokenHash string) (store.Invitation, error)
	AcceptInvitation(ctx context.Context, tokenHash, userID, email string, now time.Time) (store.Invitation, error)
	RevokeInvitation(ctx context.Context, workspaceID, invitationID string, now time.Time) error
	PlatformConnection(ctx context.Context, workspaceID string) (store.PlatformConnection, error)
	SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error)
	UserByID(ctx context.Context, id string) (store.User, error)
	// The retention setting and the space the workspace's scans take (issue 25).
	store.WorkspaceRetention
}

// Workspaces, members and invitations (docs/teams.md). Routes that act in a workspace go
// through onWorkspace with their action (routes.go), so the role is checked before anything is
// read or changed here.

// recentLines is how many lines of the security log the workspace page shows its owners.
const recentLines = 10

// workspaceData is the workspace page.
type workspaceData struct {
	Workspace   store.Workspace // with the visitor's Role
	Members     []store.Member
	Invitations []store.Invitation // pending; owners only
	// Recent are the latest lines of the security log, shown to owners (ActAudit) with a link
	// to the audit log page.
	Recent    []securitylog.Line
	Me        store.Member
	CanManage bool
	Form      inviteForm
	Sites     int
	Personal  bool
	// CanLeave is false for the last owner: a workspace always keeps one.
	CanLeave bool
	// CanDelete shows the "Delete workspace" form: owners, and never a personal workspace (the
	// visitor's or, for a co-owner, another account's home).
	CanDelete bool
	// Platform is the workspace's platform connection, shown to owners.
	Platform platformStatus
	// Bytes is about how much the workspace's scans take in the database (issue 25).
	Bytes        float64
	MaxRetention int
	// Runners are the workspace's runner tokens (owners); RunnersOn shows their section.
	Runners   []store.RunnerToken
	RunnersOn bool
}

// inviteForm is the invitation form and its errors.
type inviteForm struct {
	Email  string
	Role   string
	Errors map[string]string
}

var workspaceFlashes = map[string]string{
	"created":        "Workspace created. Invite your team below.",
	"invite-revoked": "Invitation revoked: its link no longer works.",
	"role-changed":   "Role changed.",
	"removed":        "Member removed. Their next request no longer reaches this workspace.",
	"joined":         "Welcome to the workspace.",
	"notify-on":      "Regression e-mails for this workspace turned on.",
	"notify-off":     "Regression e-mails for this workspace turned off.",
	"retention":      "Retention saved: the pruner applies it within the hour.",
}

func (s *server) workspacePage(w http.ResponseWriter, r *http.Request, status int, d workspaceData) {
	ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
	d.Workspace = workspaceFrom(ctx)
	d.CanManage = d.Workspace.Role.Can(store.ActManage)
	d.Personal = d.Workspace.ID == store.PersonalWorkspace(uid)
	var err error
	if d.Members, err = s.Workspaces.Members(ctx, d.Workspace.ID); err != nil {
		s.error(w, r, err, "")
		return
	}
	owners := 0
	for _, m := range d.Members {
		if m.UserID == uid {
			d.Me = m
		}
		if m.Role == store.RoleOwner {
			owners++
		}
	}
	d.CanLeave = d.Me.Role != store.RoleOwner || owners > 1
	if d.CanManage {
		if d.Invitations, err = s.Workspaces.Invitations(ctx, d.Workspace.ID, s.Now()); err != nil {
			s.error(w, r, err, "")
			return
		}
		if d.Platform, err = s.platformStatusOf(r, d.Workspace.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		if s.Runners != nil {
			d.RunnersOn = true
			if d.Runners, err = s.Runners.RunnerTokens(ctx, d.Workspace.ID); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		if !d.Personal {
			// Another account's personal workspace has that account's id.
			switch _, err := s.Workspaces.UserByID(ctx, d.Workspace.ID); {
			case errors.Is(err, store.ErrNotFound):
				d.CanDelete = true
			case err != nil:
				s.error(w, r, err, "")
				return
			}
		}
	}
	if d.Workspace.Role.Can(store.ActAudit) {
		recent, err := s.SecurityLog.LogOf(ctx, store.LogFilter{WorkspaceID: d.Workspace.ID, Limit: recentLines})
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		for _, e := range recent {
			d.Recent = append(d.Recent, securitylog.LineOf(e))
		}
	}
	sites, err := s.Workspaces.SitesIn(ctx, uid, d.Workspace.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	d.Sites = len(sites)
	bytes, err := s.Workspaces.WorkspaceBytes(ctx, d.Workspace.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	d.Bytes, d.MaxRetention = float64(bytes), store.MaxRetentionDays
	if d.Form.Role == "" {
		d.Form.Role = string(store.RoleViewer)
	}
	s.render(w, r, status, "workspace", page{Title: d.Workspace.Name, Flash: workspaceFlashes[r.URL.Query().Get("done")], Data: d})
}

func (s *server) handleWorkspace() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.workspacePage(w, r, http.StatusOK, workspaceData{})
	})
}

// audit records an event of a workspace in its security log, with the request's actor and
// origin (securitylog.Recorder.Record); a failure to record it is logged, never undoes it.
func (s *server) audit(ctx context.Context, workspaceID, kind, target string, details map[string]string) {
	e := store.LogEvent{WorkspaceID: workspaceID, Kind: kind, Target: target, Details: details}
	if v := visitorFrom(ctx); v != nil { // the e-mail at hand: no read to find it
		e.ActorID, e.ActorEmail = v.User.ID, v.User.Email
	}
	s.Recorder.Record(ctx, e)
}

// auditAccount records an event of userID's account in the log of each of their workspaces.
func (s *server) auditAccount(ctx context.Context, userID, email, kind string, details map[string]string) {
	s.Recorder.RecordAccount(ctx, store.LogEvent{ActorID: userID, ActorEmail: email, Kind: kind, Details: details})
}

func (s *server) handleCreateWorkspace() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		ws := store.Workspace{ID: store.NewID(), Name: r.PostForm.Get("name"), CreatedAt: s.Now()}
		ws.Normalize()
		err := ws.Validate()
		if err == nil {
			err = s.Workspaces.CreateWorkspace(r.Context(), ws, v.User.ID, s.MaxWorkspacesPerUser)
		}
		var fe *store.FieldError
		switch {
		case errors.As(err, &fe):
			s.renderError(w, r, http.StatusUnprocessableEntity, "The workspace was not created: its name: "+fe.Message+".")
			return
		case errors.Is(err, store.ErrLimit):
			s.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("You already own %d workspaces, the most one account may own here.", s.MaxWorkspacesPerUser))
			return
		case err != nil:
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("workspace created", "user", v.User.ID, "workspace", ws.ID)
		s.audit(r.Context(), ws.ID, store.LogWorkspaceCreated, ws.Name, nil)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=created", http.StatusSeeOther)
	})
}

// handleInvite makes a single-use invitation link valid store.InvitationTTL, shows it once to
// the inviter and e-mails it when SMTP is set. Only its hash is kept.
func (s *server) handleInvite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := r.Context(), workspaceFrom(r.Context())
		inv := store.Invitation{ID: store.NewID(), WorkspaceID: ws.ID, Email: r.PostForm.Get("email"), Role: store.Role(r.PostForm.Get("role")),
			InvitedBy: store.UserIDFrom(ctx), CreatedAt: s.Now(), ExpiresAt: s.Now().Add(store.InvitationTTL)}
		inv.Normalize()
		f := inviteForm{Email: inv.Email, Role: string(inv.Role), Errors: map[string]string{}}
		if err := inv.Validate(); err != nil {
			var fe *store.FieldError
			if !errors.As(err, &fe) {
				s.error(w, r, err, "")
				return
			}
			f.Errors[fe.Field] = fe.Message
			s.workspacePage(w, r, http.StatusUnprocessableEntity, workspaceData{Form: f})
			return
		}
		pending, err := s.Workspaces.Invitations(ctx, ws.ID, s.Now())
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if len(pending) >= store.MaxPendingInvitations {
			f.Errors["email"] = fmt.Sprintf("This workspace already has %d pending invitations, the most it may hold. Revoke some, or wait for them to be used or expire.", store.MaxPendingInvitations)
			s.workspacePage(w, r, http.StatusUnprocessableEntity, workspaceData{Form: f})
			return
		}
		// Daily caps (store.InvitesPerWorkspace, InvitesPerInviter), revoked invitations
		// counted: an owner cannot mail strangers by inviting, revoking and inviting again.
		for _, c := range []struct {
			key   string
			limit store.LoginLimit
			msg   string
		}{
			{throttleKey("invite workspace", ws.ID), store.InvitesPerWorkspace, "This workspace made %d invitations today, the most it may make in a day."},
			{throttleKey("invite inviter", inv.InvitedBy), store.InvitesPerInviter, "You made %d invitations today, the most one account may make in a day."},
		} {
			ok, wait, err := s.Accounts.TakeLoginAttempt(ctx, c.key, s.Now(), c.limit)
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			if !ok {
				w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
				f.Errors["email"] = fmt.Sprintf(c.msg, c.limit.Burst) + " Try again tomorrow."
				s.workspacePage(w, r, http.StatusTooManyRequests, workspaceData{Form: f})
				return
			}
		}
		token, hash := store.NewSecret("inv_")
		inv.TokenHash = hash
		if err := s.Workspaces.CreateInvitation(ctx, inv); err != nil {
			s.error(w, r, err, "")
			return
		}
		link := s.BaseURL + "/invite/" + token
		s.audit(ctx, ws.ID, store.LogInvitationCreated, inv.Email, map[string]string{"invitationId": inv.ID, "role": string(inv.Role)})
		s.Log.Info("invitation created", "workspace", ws.ID, "invitation", inv.ID, "role", inv.Role)
		mailed := false
		if s.Mail != nil {
			// A recipient gets store.InviteMailsPerEmail invitation e-mails a day, from every
			// workspace together; past them the link is only shown here, to be sent by hand.
			if mailed = s.takeMail(r, "invite mail", inv.Email, store.InviteMailsPerEmail); mailed {
				s.sendMail(r, inv.Email, "You are invited to a SitePulse workspace", invitationMail(visitorFrom(ctx).User.Email, ws.Name, inv.Role, link))
			}
		}
		send := "Send it to them:"
		if mailed {
			send = "It was e-mailed to them; you may also send it yourself:"
		}
		// Shown once, after the redirect (notice.go): a reload invites no one again.
		s.redirectNotice(w, r, "/workspaces/"+ws.ID+"#members", notice{Text: "Invitation link for " + inv.Email + ".",
			Detail: send + " it is shown only once, works once, for 7 days, and only for that e-mail address.", Secret: link, Label: "Invitation link"})
	})
}

// invitationMail is an invitation's text. What the inviter chose (the workspace's name) is
// bounded and display-safe (store.Workspace.Validate), quoted, on a line of its own, and never
// in the subject; the only link is SitePulse's.
func invitationMail(inviter, workspace string, role store.Role, link string) string {
	return fmt.Sprintf("%s invited you to a SitePulse workspace, as %s. The workspace is named:\n\n    %q\n\n"+
		"To accept, open this link within 7 days and sign in (or sign up) with this e-mail address:\n\n%s\n\n"+
		"If you do not know who sent it, ignore this message.\n", inviter, role, truncate(oneLine(workspace), store.MaxWorkspaceName), link)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (s *server) handleRevokeInvitation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		id := store.CanonicalID(r.PathValue("invitationId"))
		err := store.ErrNotFound
		if store.ValidUUID(id) {
			err = s.Workspaces.RevokeInvitation(r.Context(), ws.ID, id, s.Now())
		}
		if err != nil {
			s.error(w, r, err, "That invitation does not exist, or was already used or revoked.")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogInvitationRevoked, "", map[string]string{"invitationId": id})
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=invite-revoked", http.StatusSeeOther)
	})
}

// member finds the {userId} of the path among the workspace's members.
func (s *server) member(w http.ResponseWriter, r *http.Request, ws store.Workspace) (store.Member, bool) {
	id := store.CanonicalID(r.PathValue("userId"))
	members, err := s.Workspaces.Members(r.Context(), ws.ID)
	if err != nil {
		s.error(w, r, err, "")
		return store.Member{}, false
	}
	for _, m := range members {
		if m.UserID == id {
			return m, true
		}
	}
	s.error(w, r, store.ErrNotFound, "There is no such member in this workspace.")
	return store.Member{}, false
}

// lastOwnerMessage answers a change that would leave a workspace without an owner.
const lastOwnerMessage = "A workspace always keeps at least one owner: make another member owner first."

// holderMessage answers a change that would take the holder of a personal workspace out of it
// or make them less than owner (store.Workspaces.RemoveMember, SetRole): it is their home.
func holderMessage(ws store.Workspace, me string) string {
	if ws.ID == store.PersonalWorkspace(me) {
		return "This is your personal workspace: you stay its owner, and cannot leave it."
	}
	return "This is its holder's personal workspace: they stay its owner, and cannot be removed from it."
}

func (s *server) handleSetRole() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		m, ok := s.member(w, r, ws)
		if !ok {
			return
		}
		role, err := store.ParseRole(r.PostForm.Get("role"))
		if err != nil {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Choose owner, editor or viewer.")
			return
		}
		switch err := s.Workspaces.SetRole(r.Context(), ws.ID, m.UserID, role); {
		case errors.Is(err, store.ErrConflict) && m.UserID == ws.ID:
			s.renderError(w, r, http.StatusConflict, holderMessage(ws, store.UserIDFrom(r.Context())))
			return
		case errors.Is(err, store.ErrConflict):
			s.renderError(w, r, http.StatusConflict, lastOwnerMessage)
			return
		case err != nil:
			s.error(w, r, err, "There is no such member in this workspace.")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogRoleChanged, m.Email, map[string]string{"userId": m.UserID, "from": string(m.Role), "to": string(role)})
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=role-changed", http.StatusSeeOther)
	})
}

func (s *server) handleRemoveMember() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		m, ok := s.member(w, r, ws)
		if !ok {
			return
		}
		switch err := s.Workspaces.RemoveMember(r.Context(), ws.ID, m.UserID); {
		case errors.Is(err, store.ErrConflict) && m.UserID == ws.ID:
			s.renderError(w, r, http.StatusConflict, holderMessage(ws, store.UserIDFrom(r.Context())))
			return
		case errors.Is(err, store.ErrConflict):
			s.renderError(w, r, http.StatusConflict, lastOwnerMessage)
			return
		case err != nil:
			s.error(w, r, err, "There is no such member in this workspace.")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogMemberRemoved, m.Email, map[string]string{"userId": m.UserID, "role": string(m.Role)})
		s.Log.Info("member removed", "workspace", ws.ID, "member", m.UserID)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=removed", http.StatusSeeOther)
	})
}

// personalMessage refuses to delete a personal workspace.
const personalMessage = "A personal workspace cannot be deleted: it is its account's home. Delete its sites one by one instead."

// handleDeleteWorkspace deletes the workspace and everything in it (store.DeleteWorkspace): its
// API keys stop working and its reports' links stop opening at once, and a running scan of one
// of its sites stops as when the site is deleted. The owner types the workspace's name to confirm.
func (s *server) handleDeleteWorkspace() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, v := workspaceFrom(r.Context()), visitorFrom(r.Context())
		if ws.ID == store.PersonalWorkspace(v.User.ID) {
			s.renderError(w, r, http.StatusConflict, personalMessage)
			return
		}
		if strings.TrimSpace(r.PostForm.Get("confirm")) != ws.Name {
			s.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("The workspace was not deleted: type its name, %q, to confirm.", ws.Name))
			return
		}
		// Another account's personal workspace (its id is that account's): refused before the
		// platform's webhooks are touched.
		switch _, err := s.Workspaces.UserByID(r.Context(), ws.ID); {
		case err == nil:
			s.renderError(w, r, http.StatusConflict, personalMessage)
			return
		case !errors.Is(err, store.ErrNotFound):
			s.error(w, r, err, "")
			return
		}
		s.disconnectBeforeDeletion(r, v.User.ID, ws.ID)
		switch err := s.Workspaces.DeleteWorkspace(r.Context(), v.User.ID, ws.ID); {
		case errors.Is(err, store.ErrConflict):
			s.renderError(w, r, http.StatusConflict, personalMessage)
			return
		case err != nil:
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		s.Log.Info("workspace deleted", "user", v.User.ID, "workspace", ws.ID)
		// Its log stays until its retention: the last line says who deleted it.
		s.audit(r.Context(), ws.ID, store.LogWorkspaceDeleted, ws.Name, nil)
		http.Redirect(w, r, "/?done=workspace-deleted", http.StatusSeeOther)
	})
}

// disconnectBeforeDeletion removes SitePulse's webhooks from the platform for a workspace about
// to be deleted (with it, or with its account), as Disconnect does; a failure is logged and
// deletes nothing less: the webhooks of an unknown site are ignored.
func (s *server) disconnectBeforeDeletion(r *http.Request, userID, workspaceID string) {
	if s.Platform == nil {
		return
	}
	if _, err := s.Workspaces.PlatformConnection(r.Context(), workspaceID); err == nil {
		if _, left, err := s.Platform.Disconnect(r.Context(), userID, workspaceID); err != nil || left > 0 {
			s.Log.Warn("deletion: platform not fully disconnected", "workspace", workspaceID, "webhooks_left", left, "err", err)
		}
	}
}

func (s *server) handleLeaveWorkspace() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, v := workspaceFrom(r.Context()), visitorFrom(r.Context())
		switch err := s.Workspaces.RemoveMember(r.Context(), ws.ID, v.User.ID); {
		case errors.Is(err, store.ErrConflict) && ws.ID == v.User.ID:
			s.renderError(w, r, http.StatusConflict, holderMessage(ws, v.User.ID))
			return
		case errors.Is(err, store.ErrConflict):
			s.renderError(w, r, http.StatusConflict, lastOwnerMessage)
			return
		case err != nil:
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogMemberLeft, v.User.Email, nil)
		http.Redirect(w, r, "/?done=left-workspace", http.StatusSeeOther)
	})
}

// handleMemberNotify sets the visitor's regression e-mails for the workspace's sites.
func (s *server) handleMemberNotify() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, v := workspaceFrom(r.Context()), visitorFrom(r.Context())
		on := r.PostForm.Get("notify_regressions") == "on"
		if err := s.Workspaces.SetMemberNotify(r.Context(), ws.ID, v.User.ID, on); err != nil {
			s.error(w, r, err, "")
			return
		}
		done := "notify-off"
		if on {
			done = "notify-on"
		}
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done="+done, http.StatusSeeOther)
	})
}

// inviteData is the invitation page.
type inviteData struct {
	Invitation store.Invitation
	Token      string // to post back; the visitor holds it already
	Matches    bool   // the signed-in visitor's e-mail is the invited one
	Next       string // this page, for the login and sign-up links to come back to
}

// invitation reads the invitation of the {token} of the path: 404 for an unknown token, 410
// for a used, revoked or expired one, answered here.
func (s *server) invitation(w http.ResponseWriter, r *http.Request) (store.Invitation, string, bool) {
	token := r.PathValue("token")
	inv, err := store.Invitation{}, error(store.ErrNotFound)
	if strings.HasPrefix(token, "inv_") && len(token) <= maxBearerLen {
		inv, err = s.Workspaces.InvitationByHash(r.Context(), store.HashSecret(token))
	}
	if err == nil && !inv.Usable(s.Now()) {
		err = store.ErrGone
	}
	if err != nil {
		s.error(w, r, err, "This invitation link is not valid. Ask the workspace's owner for a new one.")
		return inv, "", false
	}
	return inv, token, true
}

func (s *server) handleInvitation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inv, token, ok := s.invitation(w, r)
		if !ok {
			return
		}
		w.Header().Set("Referrer-Policy", "no-referrer") // the token is in the path
		d := inviteData{Invitation: inv, Token: token, Next: "/invite/" + token}
		if v := visitorFrom(r.Context()); v != nil {
			d.Matches = store.CanonicalEmail(v.User.Email) == store.CanonicalEmail(inv.Email)
		}
		s.render(w, r, http.StatusOK, "invite", page{Title: "Join " + inv.WorkspaceName, Data: d})
	})
}

func (s *server) handleAcceptInvitation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inv, token, ok := s.invitation(w, r)
		if !ok {
			return
		}
		v := visitorFrom(r.Context())
		accepted, err := s.Workspaces.AcceptInvitation(r.Context(), store.HashSecret(token), v.User.ID, v.User.Email, s.Now())
		if errors.Is(err, store.ErrForbidden) {
			s.renderError(w, r, http.StatusForbidden, "This invitation is for another e-mail address. Sign in with the invited address to accept it.")
			return
		}
		if err != nil {
			s.error(w, r, err, "This invitation link is not valid. Ask the workspace's owner for a new one.")
			return
		}
		s.Log.Info("invitation accepted", "workspace", inv.WorkspaceID, "invitation", inv.ID, "user", v.User.ID)
		s.audit(r.Context(), accepted.WorkspaceID, store.LogInvitationAccepted, v.User.Email,
			map[string]string{"invitationId": accepted.ID, "role": string(accepted.Role), "invitedBy": accepted.InvitedBy})
		http.Redirect(w, r, "/workspaces/"+inv.WorkspaceID+"?done=joined", http.StatusSeeOther)
	})
}

// handleRetention sets how many days the workspace keeps page details (owners: ActManage).
func (s *server) handleRetention() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		days, err := strconv.Atoi(strings.TrimSpace(r.PostForm.Get("retention_days")))
		if err != nil || days < 0 || days > store.MaxRetentionDays {
			s.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("Keep page details for a whole number of days from 0 (forever) to %d.", store.MaxRetentionDays))
			return
		}
		if err := s.Workspaces.SetRetention(r.Context(), ws.ID, days); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogRetention, "", map[string]string{"from": strconv.Itoa(ws.RetentionDays), "to": strconv.Itoa(days)})
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=retention#retention", http.StatusSeeOther)
	})
}
