package staging

import (
	"fmt"
	"io"

	"github.com/skrip-dev/skrip/internal/errs"
)

// limitReader passes r through until one of the limits would be passed, then fails with
// the error that names that limit, so the blob store discards the partial object. With a
// declared length (sized) it fails too when r gives more bytes than size, or ends short.
type limitReader struct {
	r         io.Reader
	name      string
	limits    Limits
	userLeft  int64
	totalLeft int64
	n         int64
	sized     bool
	size      int64
	// late leaves the quota and the total out while bytes stream: quota judges them once
	// the body is whole.
	late bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if lerr := l.check(); lerr != nil {
		return 0, lerr
	}
	if l.sized && l.n > l.size {
		return 0, errs.New(ErrInvalid, map[string]any{"file": l.name, "size_bytes": l.size},
			"%s has more than its declared %d bytes (did it change while it was read?); nothing was stored", l.name, l.size)
	}
	if l.sized && err == io.EOF && l.n < l.size {
		return 0, errs.New(ErrInvalid, map[string]any{"file": l.name, "size_bytes": l.size},
			"%s ended after %d of its declared %d bytes (did it change while it was read?); nothing was stored", l.name, l.n, l.size)
	}
	return n, err
}

func (l *limitReader) check() error {
	if l.n > l.limits.MaxFileBytes {
		return errs.New(ErrTooLarge, map[string]any{"file": l.name, "limit_bytes": l.limits.MaxFileBytes},
			"%s is larger than the %s limit for one file", l.name, Size(l.limits.MaxFileBytes))
	}
	if l.late {
		return nil
	}
	return l.quota()
}

// quota names the limit, the owner's quota or the store's total, that the l.n bytes read
// pass.
func (l *limitReader) quota() error {
	switch {
	case l.n > l.userLeft:
		return errs.New(ErrQuota, map[string]any{"file": l.name, "quota_bytes": l.limits.UserQuotaBytes, "available_bytes": max(l.userLeft, 0)},
			"%s does not fit in your %s quota (%s left); delete some files first", l.name, Size(l.limits.UserQuotaBytes), Size(max(l.userLeft, 0)))
	case l.n > l.totalLeft:
		return errs.New(ErrQuota, map[string]any{"file": l.name, "limit_bytes": l.limits.MaxTotalBytes, "available_bytes": max(l.totalLeft, 0)},
			"%s does not fit: the file store is full (%s limit, %s left); ask an operator", l.name, Size(l.limits.MaxTotalBytes), Size(max(l.totalLeft, 0)))
	}
	return nil
}

// fits names the limit a file of size bytes, declared before its bytes, would pass: the
// quota or the store's total (tooLarge checks the per-file limit first, before the
// usage is read).
func (l limitReader) fits(size int64) error {
	l.n = size
	return l.check()
}

// tooLarge names the per-file limit when a file declared to be size bytes is over it.
func (s *Service) tooLarge(name string, size int64) error {
	if size <= s.limits.MaxFileBytes {
		return nil
	}
	return errs.New(ErrTooLarge, map[string]any{"file": name, "limit_bytes": s.limits.MaxFileBytes, "size_bytes": size},
		"%s (%s) is larger than the %s limit for one file", name, Size(size), Size(s.limits.MaxFileBytes))
}

// Size formats a byte count for people, in binary units: "100 MiB", "1.5 GiB", "512 B".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[exp]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
