package staging

import (
	"context"
	"errors"
	"io"
	"mime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/skrip-dev/skrip/internal/blob"
)

// untouched is a body the intake must refuse before reading.
type untouched struct{ t *testing.T }

func (u untouched) Read([]byte) (int, error) {
	u.t.Error("the intake read the body of a file it should have refused first")
	return 0, io.EOF
}

// uploaded is skrip_bytes_uploaded_total as s counts it.
func uploaded(t *testing.T, s *Service) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.BytesUploaded.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestIntakeRefusals: every field the intake reads has a clear refusal, of the kind the
// API maps to its status, and a refused file stores nothing: no file, no bytes, no
// upload, no count, and the file already under the key stays as it was.
func TestIntakeRefusals(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "fs", Limits{MaxFileBytes: 1 << 10, UserQuotaBytes: 3 << 10, MaxTotalBytes: 1 << 20})
	// 4+1024+1024+100 bytes of the 3 KiB quota held: a file of at most the per-file limit
	// (1 KiB) may still pass the 924 bytes left (920, and the 4 of the file it replaces).
	for k, n := range map[string]int{"files/kept": 0, "files/a": 1024, "files/b": 1024, "files/c": 100} {
		body := strings.Repeat("x", n)
		if n == 0 {
			body = "kept"
		}
		if _, err := s.Receive(ctx, Intake{OwnerID: "u_1", Key: k, Size: NoSize}, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	before := uploaded(t, s)
	blobsBefore, err := s.blobs.List(ctx, "files/")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("y", 1100)
	for _, c := range []struct {
		name string
		in   Intake
		body io.Reader // nil: the intake must not read it
		kind error
		want string
	}{
		{"ttl zero", Intake{TTL: "0s"}, nil, ErrInvalid, `ttl "0s" is not a positive duration such as 90m, 24h or 7d`},
		{"ttl zero days", Intake{TTL: "0d"}, nil, ErrInvalid, `ttl "0d" is not a positive duration`},
		{"ttl negative", Intake{TTL: "-1h"}, nil, ErrInvalid, `ttl "-1h" is not a positive duration`},
		{"ttl no unit", Intake{TTL: "90"}, nil, ErrInvalid, `ttl "90" is not a positive duration`},
		{"ttl words", Intake{TTL: "soon"}, nil, ErrInvalid, `ttl "soon" is not a positive duration`},
		{"ttl past the longest duration", Intake{TTL: "106752d"}, nil, ErrInvalid, `ttl "106752d" is not a positive duration`},
		{"ttl past the longest duration in hours", Intake{TTL: "2562048h"}, nil, ErrInvalid, `ttl "2562048h" is not a positive duration`},
		{"content type without subtype", Intake{ContentType: "text/"}, nil, ErrInvalid, `content type "text/" is not a media type such as text/csv`},
		{"content type with a space", Intake{ContentType: "text csv"}, nil, ErrInvalid, `content type "text csv" is not a media type`},
		{"content type with a bad parameter", Intake{ContentType: "text/csv; charset"}, nil, ErrInvalid, `is not a media type`},
		{"key outside files/", Intake{Key: "runs/x"}, nil, blob.ErrInvalidKey, "a key you choose must start with files/"},
		{"key with ..", Intake{Key: "files/../x"}, nil, blob.ErrInvalidKey, ""},
		{"declared over the per-file limit", Intake{Name: "big.bin", Size: 1100}, nil, ErrTooLarge, "big.bin (1.1 KiB) is larger than the 1 KiB limit for one file"},
		{"declared over the quota", Intake{Name: "more.bin", Size: 1000}, nil, ErrQuota, "more.bin does not fit in your 3 KiB quota (924 B left)"},
		{"streamed over the per-file limit", Intake{Name: "big.bin", Size: NoSize}, strings.NewReader(big), ErrTooLarge, "big.bin is larger than the 1 KiB limit for one file"},
		{"streamed over the quota", Intake{Name: "more.bin", Size: NoSize}, strings.NewReader(strings.Repeat("z", 1000)), ErrQuota, "more.bin does not fit in your 3 KiB quota (924 B left)"},
		{"shorter than declared", Intake{Name: "short.txt", Size: 10}, strings.NewReader("12345"), ErrInvalid, "short.txt ended after 5 of its declared 10 bytes"},
		{"longer than declared", Intake{Name: "long.txt", Size: 3}, strings.NewReader("12345"), ErrInvalid, "long.txt has more than its declared 3 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			in.OwnerID = "u_1"
			if in.Key == "" {
				in.Key = "files/kept"
			}
			if in.Size == 0 && c.body == nil {
				in.Size = NoSize
			}
			body := c.body
			if body == nil {
				body = untouched{t}
			}
			_, err := s.Receive(ctx, in, body)
			if !errors.Is(err, c.kind) || !strings.Contains(text(err), c.want) {
				t.Fatalf("Receive(%+v) = %v; want %v saying %q", in, err, c.kind, c.want)
			}
			if c.body == nil {
				// The same file as a resumable upload is refused at its creation.
				if in.Size < 0 {
					in.Size = 4
				}
				if _, err := s.BeginUpload(ctx, in); !errors.Is(err, c.kind) || !strings.Contains(text(err), c.want) {
					t.Fatalf("BeginUpload(%+v) = %v; want %v saying %q", in, err, c.kind, c.want)
				}
			}
		})
	}
	if _, err := s.BeginUpload(ctx, Intake{OwnerID: "u_1", Size: NoSize}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a resumable upload without a length: %v", err)
	}
	// Nothing was stored, or counted.
	list, _, err := s.List(ctx, "u_1", "", "", 100)
	if err != nil || len(list) != 4 {
		t.Fatalf("files after the refusals: %d, %v; want the 4 stored before", len(list), err)
	}
	if ups, err := s.st.OwnerUploads(ctx, "u_1"); err != nil || len(ups) != 0 {
		t.Errorf("uploads after the refusals: %+v, %v", ups, err)
	}
	if blobs, _ := s.blobs.List(ctx, "files/"); len(blobs) != len(blobsBefore) {
		t.Errorf("the blob store holds %d objects after the refusals, %d before", len(blobs), len(blobsBefore))
	}
	if got := uploaded(t, s); got != before {
		t.Errorf("skrip_bytes_uploaded_total moved by %v for refused files", got-before)
	}
	rc, err := s.Open(ctx, "u_1", "files/kept")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "kept" {
		t.Errorf("the file under the refused uploads' key reads %q", b)
	}
}

// text is err's text, or "" for none.
func text(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestIntakeReads: what the intake keeps of a file's fields: the ttl's bounds, the
// declared content type, or the one guessed from the name, and the name's base.
func TestIntakeReads(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "fs", Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return clock }
	for _, c := range []struct {
		name    string
		in      Intake
		ttl     time.Duration // 0: no expiry
		ct      string
		stored  string // the name stored
		content string
	}{
		{"no ttl", Intake{Name: "a.txt"}, 0, "text/plain; charset=utf-8", "a.txt", "a"},
		{"a second", Intake{Name: "a.txt", TTL: "1s"}, time.Second, "text/plain; charset=utf-8", "a.txt", "a"},
		{"minutes", Intake{TTL: "90m"}, 90 * time.Minute, "application/octet-stream", "", "a"},
		{"days", Intake{TTL: "7d"}, 7 * 24 * time.Hour, "application/octet-stream", "", "a"},
		{"the longest", Intake{TTL: "106751d"}, 106751 * 24 * time.Hour, "application/octet-stream", "", "a"},
		{"declared", Intake{Name: "a.txt", ContentType: "text/csv; charset=utf-8"}, 0, "text/csv; charset=utf-8", "a.txt", "a"},
		{"declared octet-stream is kept", Intake{Name: "a.csv", ContentType: "application/octet-stream"}, 0, "application/octet-stream", "a.csv", "a"},
		{"guessed", Intake{Name: "scores.csv"}, 0, "text/csv; charset=utf-8", "scores.csv", "a"},
		{"guessed whatever the case", Intake{Name: "DATA.JSON"}, 0, "application/json", "DATA.JSON", "a"},
		{"unknown extension", Intake{Name: "x.unknownext"}, 0, "application/octet-stream", "x.unknownext", "a"},
		{"a path keeps its base", Intake{Name: "output/deep/r.json"}, 0, "application/json", "r.json", "{}"},
		{"declared length", Intake{Name: "n.txt", Size: 5}, 0, "text/plain; charset=utf-8", "n.txt", "hello"},
		{"declared empty", Intake{Name: "e.txt", Size: 0}, 0, "text/plain; charset=utf-8", "e.txt", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			in.OwnerID, in.Key = "u_1", "files/t"
			if in.Size == 0 && c.content != "" {
				in.Size = NoSize
			}
			f, err := s.Receive(ctx, in, strings.NewReader(c.content))
			if err != nil {
				t.Fatal(err)
			}
			if f.ContentType != c.ct || (c.stored != "" && f.OriginalName != c.stored) || f.Size != int64(len(c.content)) {
				t.Errorf("stored %+v; want type %q, name %q, %d bytes", f, c.ct, c.stored, len(c.content))
			}
			if c.ttl == 0 && f.ExpiresAt != nil || c.ttl != 0 && (f.ExpiresAt == nil || !f.ExpiresAt.Equal(clock.Add(c.ttl))) {
				t.Errorf("expires at %v; want %v after %v", f.ExpiresAt, c.ttl, clock)
			}
			// A resumable upload reads the same fields the same way.
			if in.Size < 0 {
				in.Size = int64(len(c.content))
			}
			u, err := s.BeginUpload(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if u.ContentType != c.ct || u.TTL != c.ttl || (c.stored != "" && u.Name != c.stored) {
				t.Errorf("upload %+v; want type %q, ttl %v, name %q", u, c.ct, c.ttl, c.stored)
			}
			if err := s.TerminateUpload(ctx, "u_1", u.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestIntakeCountsEveryWayIn: skrip_bytes_uploaded_total grows by a stored file's bytes
// whichever way it came in: a stream, a declared length (a sandbox's publish), and a
// resumable upload made of one request or of several.
func TestIntakeCountsEveryWayIn(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "fs", Limits{MaxFileBytes: 64 << 20, UserQuotaBytes: 256 << 20, MaxTotalBytes: 256 << 20})
	step := func(what string, n int64, do func() error) {
		t.Helper()
		before := uploaded(t, s)
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := uploaded(t, s) - before; got != float64(n) {
			t.Errorf("%s: the counter moved by %v, want %d", what, got, n)
		}
	}
	step("a stream", 5, func() error {
		_, err := s.Receive(ctx, Intake{OwnerID: "u_1", Size: NoSize}, strings.NewReader("hello"))
		return err
	})
	step("a declared length", 3, func() error {
		_, err := s.Receive(ctx, Intake{OwnerID: "u_1", Size: 3}, strings.NewReader("abc"))
		return err
	})
	resumable := func(body string, cut int) func() error {
		return func() error {
			u, err := s.BeginUpload(ctx, Intake{OwnerID: "u_1", Size: int64(len(body))})
			if err != nil {
				return err
			}
			if _, _, err := s.WriteUpload(ctx, "u_1", u.ID, 0, strings.NewReader(body[:cut])); err != nil {
				return err
			}
			if _, last, err := s.WriteUpload(ctx, "u_1", u.ID, int64(cut), strings.NewReader(body[cut:])); err != nil || !last {
				return errors.Join(err, errors.New("the last bytes did not end the upload"))
			}
			_, err = s.FinishUpload(ctx, "u_1", u.ID, true)
			return err
		}
	}
	step("a resumable upload in one part", 6, resumable("resume", 0))
	big := strings.Repeat("p", minPartBytes+10)
	step("a resumable upload in parts", int64(len(big)), resumable(big, minPartBytes))
}

// FuzzIntake: whatever a sender declares, the intake's reading never panics, and what it
// accepts is what it promises: no ttl or a positive one, and a content type that is a
// media type.
func FuzzIntake(f *testing.F) {
	for _, seed := range [][3]string{{"", "", ""}, {"90m", "text/csv", "a.csv"}, {"7d", "", "../x/y.JSON"}, {"0", "text/", "."}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, ttl, ct, name string) {
		up, err := read(Intake{TTL: ttl, ContentType: ct, Name: name, Size: NoSize})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("read(%q, %q, %q) = %v, not ErrInvalid", ttl, ct, name, err)
			}
			return
		}
		if up.TTL < 0 || (ttl != "" && up.TTL == 0) {
			t.Fatalf("ttl %q read as %v", ttl, up.TTL)
		}
		if _, _, err := mime.ParseMediaType(up.ContentType); err != nil {
			t.Fatalf("content type %q (declared %q, name %q) is not a media type: %v", up.ContentType, ct, name, err)
		}
	})
}
