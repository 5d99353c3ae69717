package staging

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Upload links (docs/api.md "Upload links"): a random token that lets whoever holds it
// upload a file to one key of its owner's without signing in, until it expires, its
// uses are spent or it is revoked; each file up to the link's max_bytes and of its
// types. The file counts against the owner's quota as any upload of theirs. As with
// share links, only the token's SHA-256 is stored.

var (
	// ErrUploadType means a file sent through an upload link is not of the types the
	// link allows (400).
	ErrUploadType = errors.New("upload type refused")
	// ErrUploadLinkUsed means an upload link has taken all the uploads it allows (410).
	ErrUploadLinkUsed = errors.New("upload link used")
	// ErrUploadLinkBusy means another upload streams through the link now (409).
	ErrUploadLinkBusy = errors.New("upload link busy")
	// ErrTooManyUploadLinks means the owner holds as many live upload links as one may
	// (409).
	ErrTooManyUploadLinks = errors.New("too many upload links")
	// ErrUploadLinkFull means a file sent through an upload link does not fit in its
	// owner's quota or the store's total (507). Its message says no more: whoever holds
	// a link has no account, and must not learn the owner's quota or usage.
	ErrUploadLinkFull = errors.New("upload link owner full")
)

// uploadLinkBusy is how long one upload through a link keeps others out at most: one
// that takes longer (or whose server died) lets the next in after it.
const uploadLinkBusy = 15 * time.Minute

// UploadTokenPrefix starts every upload link token.
const UploadTokenPrefix = "sku_"

// MaxUploadLinkUses is the most uploads one link may allow.
const MaxUploadLinkUses = 1000

// MaxUploadLinks is how many live upload links (unexpired, with a use left) one owner
// may hold: each is a door anyone may push files through into the owner's quota.
const MaxUploadLinks = 100

// maxLinkTypes is the most content types one link may list.
const maxLinkTypes = 20

// NewUploadLink is an upload link to make.
type NewUploadLink struct {
	OwnerID      string
	Key          string
	CreatedBy    string
	TTL          time.Duration
	MaxBytes     int64    // 0: the server's file limit
	ContentTypes []string // media types, type/* allowed; none: any
	Uses         int64    // 0: one
}

// CreateUploadLink makes an upload link to nl.Key of nl.OwnerID's and returns it with its
// token, which is not stored and cannot be had again.
func (s *Service) CreateUploadLink(ctx context.Context, nl NewUploadLink) (store.UploadLink, string, error) {
	key, err := uploadKey(nl.Key)
	if err != nil {
		return store.UploadLink{}, "", err
	}
	if nl.Key == "" {
		return store.UploadLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "key"}, "an upload link needs the key its file goes to, under files/")
	}
	if nl.TTL <= 0 || nl.TTL > s.maxLinkTTL() {
		return store.UploadLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "ttl", "max": FormatTTL(s.maxLinkTTL())},
			"an upload link needs a ttl, a positive duration such as 1h or 7d, at most %s (SKRIP_FILES_LINK_MAX_TTL)", FormatTTL(s.maxLinkTTL()))
	}
	switch {
	case nl.MaxBytes == 0:
		nl.MaxBytes = s.limits.MaxFileBytes
	case nl.MaxBytes < 0 || nl.MaxBytes > s.limits.MaxFileBytes:
		return store.UploadLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "max_bytes", "value": nl.MaxBytes, "max": s.limits.MaxFileBytes},
			"max_bytes must be from 1 to the server's file limit, %d (%s); got %d", s.limits.MaxFileBytes, Size(s.limits.MaxFileBytes), nl.MaxBytes)
	}
	switch {
	case nl.Uses == 0:
		nl.Uses = 1
	case nl.Uses < 0 || nl.Uses > MaxUploadLinkUses:
		return store.UploadLink{}, "", errs.New(ErrInvalidLink, map[string]any{"field": "uses", "value": nl.Uses, "max": MaxUploadLinkUses},
			"uses must be from 1 to %d; got %d", MaxUploadLinkUses, nl.Uses)
	}
	types, err := linkTypes(nl.ContentTypes)
	if err != nil {
		return store.UploadLink{}, "", err
	}
	now := s.now().Truncate(time.Millisecond)
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return store.UploadLink{}, "", err
	}
	token := UploadTokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	l := store.UploadLink{ID: ids.New("upl"), TokenHash: hashLinkToken(token), OwnerID: nl.OwnerID, Key: key, CreatedBy: nl.CreatedBy,
		CreatedAt: now, ExpiresAt: now.Add(nl.TTL), MaxBytes: nl.MaxBytes, ContentTypes: types, Uses: nl.Uses}
	err = s.st.CreateUploadLink(ctx, l, s.limits.UploadLinks, now)
	if errors.Is(err, store.ErrTooManyUploadLinks) {
		return store.UploadLink{}, "", errs.New(ErrTooManyUploadLinks, map[string]any{"limit": s.limits.UploadLinks},
			"you hold %d upload links that still work, as many as one may; revoke some (DELETE /api/v1/upload-links/{id}) or wait for them to expire", s.limits.UploadLinks)
	}
	if err != nil {
		return store.UploadLink{}, "", err
	}
	return l, token, nil
}

// linkTypes checks and normalizes an upload link's content types.
func linkTypes(in []string) ([]string, error) {
	if len(in) > maxLinkTypes {
		return nil, errs.New(ErrInvalidLink, map[string]any{"field": "content_types", "max": maxLinkTypes}, "an upload link may list at most %d content types", maxLinkTypes)
	}
	out := []string{}
	for _, t := range in {
		t = strings.ToLower(strings.TrimSpace(t))
		mt, params, err := mime.ParseMediaType(t)
		major, minor, ok := strings.Cut(mt, "/")
		if err != nil || len(params) > 0 || !ok || major == "" || major == "*" || minor == "" {
			return nil, errs.New(ErrInvalidLink, map[string]any{"field": "content_types", "value": t},
				"content type %q is not a media type such as application/pdf or image/*", t)
		}
		if !slices.Contains(out, mt) {
			out = append(out, mt)
		}
	}
	return out, nil
}

// UploadLinks returns ownerID's upload links that have not expired, newest first.
func (s *Service) UploadLinks(ctx context.Context, ownerID string) ([]store.UploadLink, error) {
	return s.st.UploadLinks(ctx, ownerID, s.now())
}

// RevokeUploadLink deletes ownerID's upload link id: its URL stops working at once.
func (s *Service) RevokeUploadLink(ctx context.Context, ownerID, id string) error {
	ok, err := s.st.DeleteUploadLink(ctx, ownerID, id)
	if err != nil {
		return err
	}
	if !ok {
		return errs.New(ErrLinkNotFound, map[string]any{"link_id": id}, "no upload link %s among yours", id)
	}
	return nil
}

// FindUploadLink returns the unexpired upload link that token names. Every failure (a
// token unknown, expired, revoked, its owner disabled) is the same ErrLinkNotFound.
func (s *Service) FindUploadLink(ctx context.Context, token string) (store.UploadLink, error) {
	if !strings.HasPrefix(token, UploadTokenPrefix) || len(token) > 100 {
		return store.UploadLink{}, LinkGone()
	}
	l, err := s.st.UploadLinkByToken(ctx, hashLinkToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadLink{}, LinkGone()
	}
	if err != nil {
		return store.UploadLink{}, err
	}
	if !l.ExpiresAt.After(s.now()) {
		return store.UploadLink{}, LinkGone()
	}
	return l, nil
}

// LinkUpload is a file sent through an upload link: its name and type as the sender
// declared them ("" for none) and its length when declared (NoSize otherwise).
type LinkUpload struct {
	Name        string
	ContentType string
	Size        int64
}

// ReceiveByLink stores body as the file of the upload link token names, for the link's
// owner, taking one of its uses. A body over the link's max_bytes, of a type it does not
// allow, or that fails stores nothing and gives the use back.
func (s *Service) ReceiveByLink(ctx context.Context, token string, in LinkUpload, body io.Reader) (store.File, error) {
	l, err := s.FindUploadLink(ctx, token)
	if err != nil {
		return store.File{}, err
	}
	name := in.Name
	if name == "" {
		name = path.Base(l.Key)
	}
	if in.Size > l.MaxBytes {
		return store.File{}, linkTooLarge(l, name, in.Size)
	}
	ct, err := contentType(in.ContentType, name)
	if err != nil {
		return store.File{}, err
	}
	if !typeAllowed(l.ContentTypes, ct) {
		return store.File{}, errs.New(ErrUploadType, map[string]any{"content_type": ct, "allowed": l.ContentTypes},
			"%s is %s; this link takes only %s", name, ct, strings.Join(l.ContentTypes, ", "))
	}
	now := s.now()
	ok, err := s.st.ReserveUploadLinkUse(ctx, l.ID, now, now.Add(uploadLinkBusy))
	if err != nil {
		return store.File{}, err
	}
	if !ok {
		cur, err := s.st.UploadLinkByToken(ctx, l.TokenHash)
		switch {
		case err != nil || !cur.ExpiresAt.After(s.now()):
			return store.File{}, LinkGone()
		case cur.Used < cur.Uses:
			// One upload at a time: uploads racing each other would each see the same
			// room in the owner's quota.
			return store.File{}, errs.New(ErrUploadLinkBusy, nil,
				"another upload through this link is under way; send the file again when it is done").Retry(5 * time.Second)
		}
		return store.File{}, errs.New(ErrUploadLinkUsed, map[string]any{"uses": l.Uses},
			"this upload link has been used: it takes %d upload(s), and no more; ask whoever sent it for a new one", l.Uses)
	}
	var f store.File
	up, err := read(Intake{OwnerID: l.OwnerID, Key: l.Key, Name: name, ContentType: ct, Size: in.Size})
	if err == nil {
		// The link's max_bytes and the per-file limit are the sender's to know, and are
		// checked from the declared length and while the bytes stream; the owner's quota
		// and the store's total are judged only once the whole body is in the blob store's
		// temporary place (lateQuota), so the refusal never depends on how many bytes came
		// before it: a sender cannot find the owner's free room by declaring lengths or
		// by watching where a stream is cut. Disk use stays within max_bytes, and a body
		// that does not fit is deleted before it is indexed.
		up.Body = &capped{r: body, left: l.MaxBytes, over: func(n int64) error { return linkTooLarge(l, name, n) }}
		up.lateQuota = true
		f, err = s.Put(ctx, up)
	}
	// A failed or refused upload gives its use back, a 507 too: a sender whose file is
	// too big may send a smaller one. That lets probing go on, but each probe costs a
	// whole file of the size probed (the refusal comes only after its last byte), and
	// only one upload runs through a link at a time.
	if rerr := s.st.EndUploadLinkUse(context.WithoutCancel(ctx), l.ID, err == nil); rerr != nil {
		s.log.Warn("ending an upload through a link", "link", l.ID, "error", rerr)
	}
	if errors.Is(err, ErrQuota) {
		// The owner's quota and usage (or the store's) are theirs to see, in their own
		// calls, not the sender's.
		s.log.Info("an upload through a link did not fit", "link", l.ID, "owner", l.OwnerID, "error", err)
		return store.File{}, errs.New(ErrUploadLinkFull, map[string]any{"file": name},
			"%s was not stored: the link's owner has no room for it; tell whoever sent you the link", name)
	}
	if err != nil {
		return store.File{}, err
	}
	return f, nil
}

func linkTooLarge(l store.UploadLink, name string, size int64) error {
	return errs.New(ErrTooLarge, map[string]any{"file": name, "limit_bytes": l.MaxBytes, "size_bytes": size},
		"%s is larger than the %s this upload link takes", name, Size(l.MaxBytes))
}

// typeAllowed reports whether ct is one of types (type/* matching any subtype), or
// types is empty.
func typeAllowed(types []string, ct string) bool {
	if len(types) == 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	major, _, _ := strings.Cut(mt, "/")
	return slices.Contains(types, mt) || slices.Contains(types, major+"/*")
}

// capped reads r, failing with over once it gives more than left bytes.
type capped struct {
	r    io.Reader
	left int64
	read int64
	over func(n int64) error
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.left {
		return 0, c.over(c.read)
	}
	return n, err
}
