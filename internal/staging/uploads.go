package staging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Resumable uploads (docs/api.md "Resumable uploads"): a staged file whose bytes arrive
// over as many requests as the client needs, from any API node. Every request's bytes are
// stored as parts (of at most partBytes each), blobs of their own, so nothing partial is
// kept on one node's disk and a crash loses at most the part being written;
// when the last byte is in, the parts become the staged file: a lone part is taken as it
// is, several are copied into one blob, which computes the checksum over the whole file.

// Sentinel errors of resumable uploads, mapped to HTTP codes by the api package.
var (
	// ErrUploadNotFound means no unexpired upload of the caller's has the id (404).
	ErrUploadNotFound = errors.New("upload not found")
	// ErrUploadOffset means a request's bytes do not start where the upload stands, or
	// another request is writing or finishing it (409).
	ErrUploadOffset = errors.New("upload offset conflict")
	// ErrTooManyUploads means the user has as many unfinished uploads as one may (409).
	ErrTooManyUploads = errors.New("too many unfinished uploads")
)

const (
	// DefaultUploadTTL is how long an unfinished upload waits for its next bytes, and how
	// long a finished one still answers, when Limits.UploadTTL is 0.
	DefaultUploadTTL = 24 * time.Hour
	// MaxOpenUploads is how many unfinished uploads one user may have.
	MaxOpenUploads = 100
	// MaxUploadParts is how many requests' bytes one upload may take: each is a blob and
	// a row, and the file is copied from all of them at the end.
	MaxUploadParts = 10000
	// finishHold is how long a server making an upload's file holds it without renewing
	// the hold (it renews it every third of that while it copies); one that crashes
	// meanwhile leaves the upload to the first request after the hold.
	finishHold = time.Minute
)

// NewUpload is a resumable upload to create.
type NewUpload struct {
	OwnerID     string
	Key         string // "" gets files/f_<ULID>, fixed now, so that a resume finishes into it
	Name        string
	ContentType string // "" is application/octet-stream
	TTL         time.Duration
	Size        int64
}

// UploadTTL is how long an unfinished upload waits for its next bytes.
func (s *Service) UploadTTL() time.Duration {
	if s.limits.UploadTTL > 0 {
		return s.limits.UploadTTL
	}
	return DefaultUploadTTL
}

// CreateUpload starts a resumable upload of nu.Size bytes. The limits are checked now,
// against the whole size: the per-file size, and the owner's quota and the store's total
// with the files there are and the bytes other unfinished uploads have reserved.
func (s *Service) CreateUpload(ctx context.Context, nu NewUpload) (store.Upload, error) {
	key, err := uploadKey(nu.Key)
	if err != nil {
		return store.Upload{}, err
	}
	name := displayName(nu.Name, key)
	if err := s.tooLarge(name, nu.Size); err != nil {
		return store.Upload{}, err
	}
	now := s.now()
	user, total, err := s.usage(ctx, nu.OwnerID, "", now)
	if err != nil {
		return store.Upload{}, err
	}
	if user, total, err = s.makeRoom(ctx, nu.OwnerID, user, total); err != nil {
		return store.Upload{}, err
	}
	// The file it replaces frees its bytes (or the versions it pushes out, when they are kept).
	freed := s.freedByOverwrite(ctx, nu.OwnerID, key, now)
	user -= freed
	total -= freed
	lr := limitReader{name: name, limits: s.limits, userLeft: s.limits.UserQuotaBytes - user, totalLeft: s.limits.MaxTotalBytes - total}
	if err := lr.fits(nu.Size); err != nil {
		return store.Upload{}, err
	}
	ct := nu.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	u := store.Upload{ID: ids.New("up"), OwnerID: nu.OwnerID, Key: key, Name: cleanName(nu.Name, key), ContentType: ct, TTL: nu.TTL,
		Size: nu.Size, CreatedAt: now, ExpiresAt: now.Add(s.UploadTTL())}
	// The store checks the limits once more, with the insert: the check above may have
	// raced other creations of the owner's.
	err = s.st.CreateUpload(ctx, u, store.UploadLimits{MaxOpen: s.limits.OpenUploads, UserQuota: s.limits.UserQuotaBytes, MaxTotal: s.limits.MaxTotalBytes, Freed: freed}, now)
	if errors.Is(err, store.ErrTooManyUploads) {
		return store.Upload{}, errs.New(ErrTooManyUploads, map[string]any{"limit": s.limits.OpenUploads},
			"you have %d unfinished uploads, as many as one may have; finish or delete some (DELETE /api/v1/uploads/{id}), or wait for them to expire", s.limits.OpenUploads)
	}
	if err != nil {
		return store.Upload{}, s.limitError(err, name)
	}
	return u, nil
}

// usage is the bytes held at now by live files and reserved by unfinished uploads other
// than except: ownerID's, and everyone's.
func (s *Service) usage(ctx context.Context, ownerID, except string, now time.Time) (user, total int64, err error) {
	u, total, err := s.st.UsageBesideUpload(ctx, ownerID, except, now)
	return u.Total(), total, err
}

// Upload returns ownerID's upload id. An upload whose bytes are all in but whose file no
// server is making (the one that tried failed, or crashed) is reopened first: its last
// part is dropped, so the client sends those bytes again and that request finishes it.
func (s *Service) Upload(ctx context.Context, ownerID, id string) (store.Upload, error) {
	u, err := s.upload(ctx, ownerID, id)
	if err != nil {
		return store.Upload{}, err
	}
	now := s.now()
	if u.FinishedAt != nil || u.Received < u.Size || u.Size == 0 || u.FinishingUntil.After(now) {
		return u, nil
	}
	parts, err := s.st.UploadParts(ctx, id)
	if err != nil || len(parts) == 0 {
		return u, err
	}
	last := parts[len(parts)-1]
	if len(parts) == 1 {
		// A lone part may be the file's bytes already: the finish committed the file and
		// then could not record so. Then the upload is finished, and its part is no
		// longer its to drop.
		if f, err := s.st.FileOf(ctx, ownerID, u.Key); err == nil && f.BlobKey == last.BlobKey {
			if err := s.st.EndFinishUpload(ctx, id, true, f.CreatedAt, now.Add(s.UploadTTL())); err != nil {
				return store.Upload{}, err
			}
			return s.upload(ctx, ownerID, id)
		}
	}
	dropped, err := s.st.DropLastUploadPart(ctx, id, last, now)
	if err != nil {
		return store.Upload{}, err
	}
	if !dropped {
		// Another request reopened it first (or has since sent the last bytes again):
		// the upload is no longer as read above.
		return s.upload(ctx, ownerID, id)
	}
	s.deleteBlob(ctx, last.BlobKey, "the last part of a reopened upload")
	u.Received -= last.Size
	u.Parts--
	return u, nil
}

// upload returns ownerID's upload id as it is.
func (s *Service) upload(ctx context.Context, ownerID, id string) (store.Upload, error) {
	u, err := s.st.UploadOf(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (u.OwnerID != ownerID || !u.ExpiresAt.After(s.now()))) {
		return store.Upload{}, errs.New(ErrUploadNotFound, map[string]any{"upload_id": id},
			"no upload %s: it never was, has expired, was deleted, or is not yours", id)
	}
	return u, err
}

// minPartBytes and partsPerFile size the parts a request's bytes are stored in: each
// part is recorded when it is full, so a server killed during a request loses only the
// part it was writing, and the client resumes after the parts before it. A request's bytes
// that fit in one part stay one part, which a one-request upload keeps as its file with
// no copy; more parts are copied into one blob when the upload is finished. partsPerFile
// parts of the part size hold the largest file a server takes, which leaves most of
// MaxUploadParts for interrupted requests.
const (
	minPartBytes = 8 << 20
	partsPerFile = 1000
)

// partBytes is the most bytes of a request stored as one part.
func (s *Service) partBytes() int64 {
	return max(minPartBytes, (s.limits.MaxFileBytes+partsPerFile-1)/partsPerFile)
}

// WriteUpload stores the bytes r gives as the parts of ownerID's upload id that start at
// offset, which must be where the upload stands. Each part of partBytes is recorded before
// the next is read, so what a crash interrupts is only the part being written. The bytes
// read before r ends are kept, whatever ended it: r ending early is a client that went
// away, and it resumes from there. It returns how many bytes were stored, and whether
// they were the last: then the caller holds the upload, and finishes it (FinishUpload
// with held).
func (s *Service) WriteUpload(ctx context.Context, ownerID, id string, offset int64, r io.Reader) (int64, bool, error) {
	u, err := s.Upload(ctx, ownerID, id)
	if err != nil {
		return 0, false, err
	}
	if u.FinishedAt != nil || offset != u.Received {
		return 0, false, errs.New(ErrUploadOffset, map[string]any{"upload_id": id, "offset": u.Received, "sent_offset": offset},
			"upload %s stands at byte %d, not %d: ask for its offset (HEAD) and send from there", id, u.Received, offset)
	}
	if u.Parts >= MaxUploadParts {
		return 0, false, errs.New(ErrUploadOffset, map[string]any{"upload_id": id, "limit": MaxUploadParts},
			"upload %s holds %d parts, as many as one upload may; delete it and upload the file again", id, MaxUploadParts)
	}
	chunk := s.partBytes()
	var stored int64
	for parts := u.Parts; parts < MaxUploadParts; parts++ {
		at := offset + stored
		left := u.Size - at
		// A byte more than is left shows a body that goes on past the upload's length:
		// its bytes are refused rather than cut, so that no file is made of a part of them.
		want, last := chunk, false
		if left < chunk {
			want, last = left+1, true
		}
		n, err := s.writePart(ctx, u, ownerID, at, io.LimitReader(r, want))
		stored += n
		switch {
		case err != nil:
			// The parts before are stored and recorded: the client resumes after them.
			return stored, false, err
		case n < want || last:
			// r ended (or, for the last part, gave every byte left).
			return stored, offset+stored == u.Size, nil
		}
	}
	return stored, offset+stored == u.Size, nil
}

// writePart stores what r gives as u's part at offset at, and records it. An empty r
// stores nothing.
func (s *Service) writePart(ctx context.Context, u store.Upload, ownerID string, at int64, r io.Reader) (int64, error) {
	blobKey := "files/_objects/" + ids.New("b")
	left := u.Size - at
	info, err := s.blobs.Put(ctx, blobKey, r, blob.PutOptions{ContentType: u.ContentType, FileKey: u.Key, Owner: ownerID, Name: u.Name})
	if err != nil {
		return 0, err
	}
	if info.Size > left {
		s.deleteBlob(ctx, blobKey, "a part past the upload's length")
		return 0, errs.New(ErrTooLarge, map[string]any{"upload_id": u.ID, "offset": at, "size_bytes": u.Size},
			"upload %s has %d bytes left after byte %d, and the request sent more; send at most the bytes left", u.ID, left, at)
	}
	if info.Size == 0 {
		s.deleteBlob(ctx, blobKey, "an empty part")
		return 0, nil
	}
	now := s.now()
	p := store.UploadPart{Start: at, Size: info.Size, BlobKey: blobKey, Checksum: info.Checksum}
	if err := s.st.AddUploadPart(context.WithoutCancel(ctx), u.ID, p, MaxUploadParts, now, now.Add(s.UploadTTL()), now.Add(finishHold)); err != nil {
		s.deleteBlob(ctx, blobKey, "a part another request overtook")
		if errors.Is(err, store.ErrConflict) {
			return 0, errs.New(ErrUploadOffset, map[string]any{"upload_id": u.ID, "sent_offset": at},
				"another request wrote to upload %s at byte %d first: ask for its offset (HEAD) and send from there", u.ID, at)
		}
		return 0, err
	}
	return info.Size, nil
}

// FinishUpload makes ownerID's upload id, whose bytes are all in, the staged file under
// its key. held says the caller holds the upload already: its request stored the last
// bytes (WriteUpload). The file's limits are checked again; a file that no longer fits
// ends the upload. After any other failure the upload is reopened at the next request
// (Upload).
func (s *Service) FinishUpload(ctx context.Context, ownerID, id string, held bool) (store.File, error) {
	u, err := s.upload(ctx, ownerID, id)
	if err != nil {
		return store.File{}, err
	}
	if u.FinishedAt != nil {
		return s.Get(ctx, ownerID, u.Key)
	}
	took := held
	if !held {
		now := s.now()
		if took, err = s.st.BeginFinishUpload(ctx, id, now, now.Add(finishHold)); err != nil {
			return store.File{}, err
		}
	}
	if !took {
		return store.File{}, errs.New(ErrUploadOffset, map[string]any{"upload_id": id},
			"upload %s is not complete, or another request is making its file now; ask for its offset (HEAD)", id)
	}
	stop := s.holdUpload(id)
	f, parts, err := s.finish(context.WithoutCancel(ctx), u)
	stop()
	done := err == nil
	// A finished upload's time is its file's, which tells that file from a later one
	// under the same key.
	if endErr := s.st.EndFinishUpload(context.WithoutCancel(ctx), id, done, f.CreatedAt, s.now().Add(s.UploadTTL())); endErr != nil && done {
		return store.File{}, endErr
	}
	if !done {
		if errors.Is(err, ErrQuota) || errors.Is(err, ErrTooLarge) {
			// It will not fit however often it is sent: end it, and free its reservation.
			if _, terr := s.terminate(context.WithoutCancel(ctx), u); terr != nil {
				s.log.Warn("could not delete an upload whose file did not fit; it expires", "upload", id, "error", terr)
			}
		}
		return store.File{}, err
	}
	for _, p := range parts {
		if p.BlobKey != f.BlobKey {
			s.deleteBlob(ctx, p.BlobKey, "a part of a finished upload")
		}
	}
	return f, nil
}

// holdUpload renews this server's hold on upload id until the function it returns is
// called: a large file's copy may take longer than one hold.
func (s *Service) holdUpload(id string) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(finishHold / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := s.st.ExtendFinishUpload(context.Background(), id, s.now().Add(finishHold)); err != nil {
					s.log.Warn("could not renew the hold on an upload being finished", "upload", id, "error", err)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// finish makes u's file from its parts, and returns it with the parts it was made from.
func (s *Service) finish(ctx context.Context, u store.Upload) (store.File, []store.UploadPart, error) {
	parts, err := s.st.UploadParts(ctx, u.ID)
	if err != nil {
		return store.File{}, nil, err
	}
	var at int64
	for _, p := range parts {
		if p.Start != at {
			return store.File{}, nil, fmt.Errorf("upload %s: its parts leave out bytes %d-%d", u.ID, at, p.Start)
		}
		at += p.Size
	}
	if at != u.Size {
		return store.File{}, nil, fmt.Errorf("upload %s: its parts hold %d bytes, not %d", u.ID, at, u.Size)
	}
	if len(parts) == 1 {
		// One request brought every byte: its blob is the file, checksum and all.
		now := s.now()
		f := store.File{Key: u.Key, OwnerID: u.OwnerID, Size: u.Size, Checksum: parts[0].Checksum, ContentType: u.ContentType,
			OriginalName: u.Name, CreatedAt: now, BlobKey: parts[0].BlobKey, VersionID: ids.New("v")}
		if u.TTL > 0 {
			exp := now.Add(u.TTL)
			f.ExpiresAt = &exp
		}
		return f, parts, s.commit(ctx, f, displayName(u.Name, u.Key), now)
	}
	body := &partsReader{ctx: ctx, blobs: s.blobs, parts: parts}
	defer body.Close()
	f, err := s.Put(ctx, Upload{OwnerID: u.OwnerID, Key: u.Key, Name: u.Name, ContentType: u.ContentType, TTL: u.TTL, Body: body, uploadID: u.ID})
	return f, parts, err
}

// TerminateUpload deletes ownerID's upload id and the bytes it has.
func (s *Service) TerminateUpload(ctx context.Context, ownerID, id string) error {
	u, err := s.Upload(ctx, ownerID, id)
	if err != nil {
		return err
	}
	gone, err := s.terminate(ctx, u)
	if err == nil && !gone {
		return errs.New(ErrUploadOffset, map[string]any{"upload_id": id}, "upload %s is making its file now; it cannot be deleted", id)
	}
	return err
}

// terminate forgets u and deletes its parts' bytes, unless a server is finishing it. It
// reports whether u went.
func (s *Service) terminate(ctx context.Context, u store.Upload) (bool, error) {
	parts, gone, err := s.st.DeleteUpload(ctx, u.ID, s.now())
	if err != nil || !gone {
		return gone, err
	}
	for _, p := range parts {
		s.deleteBlob(ctx, p.BlobKey, "a part of a deleted upload")
	}
	return true, nil
}

// ExpiredUploads is what one expiry pass of uploads removed.
type ExpiredUploads struct {
	Uploads int   // unfinished uploads that expired
	Bytes   int64 // the bytes they had received
}

// ExpireUploads deletes the unfinished uploads whose time ran out, with their bytes, and
// forgets finished ones whose time to answer did.
func (s *Service) ExpireUploads(ctx context.Context) (ExpiredUploads, error) {
	var out ExpiredUploads
	for {
		batch, err := s.st.ExpiredUploads(ctx, s.now(), 200)
		if err != nil || len(batch) == 0 {
			return out, err
		}
		removed := 0
		for _, u := range batch {
			gone, err := s.terminate(ctx, u)
			if err != nil {
				return out, err
			}
			if gone {
				removed++
				if u.FinishedAt == nil {
					out.Uploads++
					out.Bytes += u.Received
				}
			}
		}
		if removed == 0 {
			return out, nil
		}
	}
}

// deleteBlob deletes bytes nothing points to any more; what it cannot delete is logged.
func (s *Service) deleteBlob(ctx context.Context, key, what string) {
	if err := s.blobs.Delete(context.WithoutCancel(ctx), key); err != nil && !errors.Is(err, blob.ErrNotFound) {
		s.log.Warn("could not delete "+what, "blob", key, "error", err)
	}
}

// partsReader reads an upload's parts one after another, each checked to be as long as
// recorded.
type partsReader struct {
	ctx   context.Context
	blobs blob.Store
	parts []store.UploadPart
	cur   io.ReadCloser
	left  int64 // bytes of the current part still to come
}

func (r *partsReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			part := r.parts[0]
			rc, _, err := r.blobs.Get(r.ctx, part.BlobKey, 0, -1)
			if err != nil {
				return 0, fmt.Errorf("reading bytes %d-%d of an upload: %w", part.Start, part.Start+part.Size, err)
			}
			r.cur, r.left = rc, part.Size
		}
		n, err := r.cur.Read(p)
		r.left -= int64(n)
		if r.left < 0 {
			return 0, fmt.Errorf("the part at byte %d of an upload is longer than recorded", r.parts[0].Start)
		}
		if err == io.EOF {
			if r.left != 0 {
				return 0, fmt.Errorf("the part at byte %d of an upload is %d bytes short", r.parts[0].Start, r.left)
			}
			r.cur.Close()
			r.cur, r.parts = nil, r.parts[1:]
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (r *partsReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}
