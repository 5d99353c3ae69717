package staging

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Share links (docs/api.md "Share links"): a random token that lets whoever holds it
// download one file without signing in, until it expires, runs out of downloads or is
// revoked. The token is 32 bytes from crypto/rand, shown once; only its SHA-256 is stored,
// so neither the key nor the database gives it away.

var (
	// ErrLinkNotFound means a link token or id that leads nowhere: unknown, expired,
	// revoked, or its file gone. Which of these is never said (404).
	ErrLinkNotFound = errors.New("link not found")
	// ErrInvalidLink means a link request with a bad ttl or max_downloads (400).
	ErrInvalidLink = errors.New("invalid link")
	// ErrLinkUsedUp means a link has served all the bytes its max_downloads allow, or
	// would pass them with this request (410). It is told apart from ErrLinkNotFound: the
	// holder had the right token, and learns only that it is spent.
	ErrLinkUsedUp = errors.New("link used up")
)

// LinkTokenPrefix starts every share link token.
const LinkTokenPrefix = "skl_"

// DefaultLinkMaxTTL is the longest ttl a link may have when Limits.LinkMaxTTL is 0.
const DefaultLinkMaxTTL = 7 * 24 * time.Hour

// NewLink is a share link to make.
type NewLink struct {
	OwnerID      string // whose file
	Key          string
	CreatedBy    string // the caller: the owner or an admin
	TTL          time.Duration
	MaxDownloads *int64 // nil: no limit
}

// maxLinkTTL is the longest ttl a link may have.
func (s *Service) maxLinkTTL() time.Duration {
	if s.limits.LinkMaxTTL > 0 {
		return s.limits.LinkMaxTTL
	}
	return DefaultLinkMaxTTL
}

// CreateLink makes a share link of the live file nl.Key of nl.OwnerID's and returns it
// with its token, which is not stored and cannot be had again. A link never outlives its
// file: its expiry is at most the file's.
func (s *Service) CreateLink(ctx context.Context, nl NewLink) (store.FileLink, string, error) {
	if nl.TTL <= 0 {
		return store.FileLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "ttl"},
			"a link needs a ttl, a positive duration such as 1h or 7d, at most %s", FormatTTL(s.maxLinkTTL()))
	}
	if nl.TTL > s.maxLinkTTL() {
		return store.FileLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "ttl", "value": FormatTTL(nl.TTL), "max": FormatTTL(s.maxLinkTTL())},
			"the link's ttl %s is longer than the %s this server allows (SKRIP_FILES_LINK_MAX_TTL)", FormatTTL(nl.TTL), FormatTTL(s.maxLinkTTL()))
	}
	if nl.MaxDownloads != nil && *nl.MaxDownloads < 1 {
		return store.FileLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "max_downloads", "value": *nl.MaxDownloads},
			"max_downloads must be 1 or more, got %d; leave it out for no limit", *nl.MaxDownloads)
	}
	f, err := s.Get(ctx, nl.OwnerID, nl.Key)
	if err != nil {
		return store.FileLink{}, "", err
	}
	now := s.now().Truncate(time.Millisecond)
	expires := now.Add(nl.TTL)
	if f.ExpiresAt != nil && f.ExpiresAt.Before(expires) {
		expires = *f.ExpiresAt
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return store.FileLink{}, "", err
	}
	token := LinkTokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	l := store.FileLink{ID: ids.New("lnk"), TokenHash: hashLinkToken(token), OwnerID: nl.OwnerID, Key: f.Key, CreatedBy: nl.CreatedBy,
		CreatedAt: now, ExpiresAt: expires, MaxDownloads: nl.MaxDownloads}
	if err := s.st.CreateFileLink(ctx, l); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Deleted since Get.
			return store.FileLink{}, "", errs.New(ErrNotFound, map[string]any{"key": f.Key}, "file not found: %s", f.Key)
		}
		return store.FileLink{}, "", err
	}
	return l, token, nil
}

// Links returns the unexpired links of ownerID's live file under key, the newest first.
func (s *Service) Links(ctx context.Context, ownerID, key string) ([]store.FileLink, error) {
	f, err := s.Get(ctx, ownerID, key)
	if err != nil {
		return nil, err
	}
	return s.st.FileLinks(ctx, ownerID, f.Key, s.now())
}

// RevokeLink deletes ownerID's link id: its URL stops working at once.
func (s *Service) RevokeLink(ctx context.Context, ownerID, id string) error {
	ok, err := s.st.DeleteFileLink(ctx, ownerID, id)
	if err != nil {
		return err
	}
	if !ok {
		return errs.New(ErrLinkNotFound, map[string]any{"link_id": id}, "no link %s among your files' links", id)
	}
	return nil
}

// LinkGone is the one answer to every link that does not lead to a file.
func LinkGone() error {
	return errs.New(ErrLinkNotFound, nil, "this link does not work: it is wrong, has expired or was revoked; ask whoever shared it for a new one")
}

// FindLink returns the unexpired link that token names and the live file it serves.
// Every failure to find them (a token unknown, expired, revoked, its file gone) is the
// same ErrLinkNotFound, which says nothing of the file.
func (s *Service) FindLink(ctx context.Context, token string) (store.FileLink, store.File, error) {
	if !strings.HasPrefix(token, LinkTokenPrefix) || len(token) > 100 {
		return store.FileLink{}, store.File{}, LinkGone()
	}
	l, err := s.st.FileLinkByToken(ctx, hashLinkToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return store.FileLink{}, store.File{}, LinkGone()
	}
	if err != nil {
		return store.FileLink{}, store.File{}, err
	}
	if !l.ExpiresAt.After(s.now()) {
		return store.FileLink{}, store.File{}, LinkGone()
	}
	f, err := s.Get(ctx, l.OwnerID, l.Key)
	if errors.Is(err, ErrNotFound) {
		return store.FileLink{}, store.File{}, LinkGone()
	}
	if err != nil {
		return store.FileLink{}, store.File{}, err
	}
	return l, f, nil
}

// LinkRead is what one request through a link reads of its file.
type LinkRead struct {
	// Bytes is the body bytes the request will send, reserved before it sends any.
	Bytes int64
	// Download is set when it reads from the file's first byte: a download, counted in
	// the link's Downloads. A request for later bytes only (a resume) counts none.
	Download bool
	// Probe is a HEAD: it reads nothing, and a used-up link refuses it as it refuses a GET.
	Probe bool
}

// A link's max_downloads limits the bytes it serves: at most max_downloads × the file's
// size in all, whatever ranges ask for them (docs/spec.md §4b). Counting downloads alone
// let a used-up link serve the file again as "resumes": bytes=1- sent all but one byte,
// as often as asked. So every request reserves the bytes it will send before it sends
// any, in one conditional UPDATE across API nodes, and gives back what it did not send.

// UseLink lets read go through l to f, or refuses with ErrLinkUsedUp when its bytes (or
// its download) do not fit in what l has left; on success it returns l as counted.
func (s *Service) UseLink(ctx context.Context, l store.FileLink, f store.File, read LinkRead) (store.FileLink, error) {
	if read.Probe {
		if UsedUp(l, f) {
			return store.FileLink{}, linkUsedUp(l, f)
		}
		return l, nil
	}
	ok, err := s.st.ReserveFileLinkRead(ctx, l.ID, s.now(), read.Bytes, f.Size, read.Download)
	if err != nil {
		return store.FileLink{}, err
	}
	if !ok {
		if l.MaxDownloads == nil || !l.ExpiresAt.After(s.now()) {
			// Revoked or expired since it was found.
			return store.FileLink{}, LinkGone()
		}
		if cur, err := s.st.FileLinkByToken(ctx, l.TokenHash); err == nil {
			l = cur // the counts as they are, for the message
		}
		return store.FileLink{}, linkUsedUp(l, f)
	}
	l.BytesServed += read.Bytes
	if read.Download {
		l.Downloads++
	}
	return l, nil
}

// ReturnLink gives back the part of read's reservation on l that was not sent: sent of
// its bytes went out, and a download that sent nothing is not counted.
func (s *Service) ReturnLink(ctx context.Context, l store.FileLink, read LinkRead, sent int64) error {
	unsent := max(read.Bytes-sent, 0)
	uncount := read.Download && sent == 0
	if unsent == 0 && !uncount {
		return nil
	}
	return s.st.ReturnFileLinkRead(ctx, l.ID, unsent, uncount)
}

// UsedUp reports whether l has served all that its max_downloads allow of f.
func UsedUp(l store.FileLink, f store.File) bool {
	if l.MaxDownloads == nil {
		return false
	}
	return l.Downloads >= *l.MaxDownloads && l.BytesServed >= *l.MaxDownloads*f.Size
}

// linkUsedUp is the refusal of a request past l's bytes.
func linkUsedUp(l store.FileLink, f store.File) error {
	limit := *l.MaxDownloads * f.Size
	return errs.New(ErrLinkUsedUp, map[string]any{"max_downloads": *l.MaxDownloads, "size_bytes": f.Size, "limit_bytes": limit,
		"served_bytes": l.BytesServed},
		"this link has been used up: it may serve %d download(s) of the file's %d bytes, %d bytes in all, resumed downloads included, and has served %d; "+
			"a download cut short may resume where it stopped (a Range from there), else ask whoever shared it for a new link",
		*l.MaxDownloads, f.Size, limit, l.BytesServed)
}

// ExpireLinks removes the share links and upload links that have expired, and returns
// how many went.
func (s *Service) ExpireLinks(ctx context.Context) (int, error) {
	n, err := s.st.DeleteExpiredFileLinks(ctx, s.now())
	if err != nil {
		return int(n), err
	}
	u, err := s.st.DeleteExpiredUploadLinks(ctx, s.now())
	return int(n + u), err
}

func hashLinkToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// FormatTTL writes d as a person would: whole days as 7d, else Go's form without zero
// units (1h30m0s is 1h30m).
func FormatTTL(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
