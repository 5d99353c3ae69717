package account

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Audit actions. Each is stored as given and listed on the admin's audit page.
const (
	AuditSignIn        = "signin"
	AuditSignInFailed  = "signin_failed"
	AuditSignOut       = "signout"
	AuditUserCreated   = "user_created"
	AuditUserDisabled  = "user_disabled"
	AuditUserEnabled   = "user_enabled"
	AuditUserDeleted   = "user_deleted"
	AuditUserExported  = "user_exported"
	AuditRoleChanged   = "role_changed"
	AuditPasswordSet   = "password_set"
	AuditTokenCreated  = "token_created"
	AuditTokenRevoked  = "token_revoked"
	AuditSessionsEnded = "sessions_ended"
	AuditInvited       = "invitation_created"
	AuditInviteUsed    = "invitation_used"
	AuditCLILogin      = "cli_login"
	// A tool's maintainers (catalog.AddMaintainer): the target is the tool's slug, the
	// details name the user.
	AuditMaintainerAdded   = "maintainer_added"
	AuditMaintainerRemoved = "maintainer_removed"
)

// Actor is who did something, and from where (the client's address as httpkit.Front
// resolves it). The zero Actor is the server itself.
type Actor struct {
	User    store.User
	Address string
	// UserAgent is the browser's, where a browser session starts (not audited).
	UserAgent string
}

// Audit records that actor did action to target (a user's name, a token's id, …) with
// details. Recording never fails the action: an event that cannot be stored is logged.
func (s *Service) Audit(ctx context.Context, actor Actor, action, target string, details map[string]any) {
	d := "{}"
	if len(details) > 0 {
		if b, err := json.Marshal(details); err == nil {
			d = string(b)
		}
	}
	e := store.AuditEvent{ID: ids.New("ev"), At: s.now(), ActorID: actor.User.ID, Actor: actor.User.Name,
		Action: action, Target: target, Address: actor.Address, Details: d}
	if err := s.st.AddAudit(context.WithoutCancel(ctx), e); err != nil {
		slog.Error("storing an audit event", "action", action, "target", target, "err", err)
	}
}
