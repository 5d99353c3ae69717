package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseBytes reads a byte count: a whole number, optionally with a unit (B, KB, MB, GB,
// TB, KiB, MiB, GiB, TiB).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || (mult > 1 && n > (1<<62)/mult) {
		return 0, fmt.Errorf("%q is not a byte count (e.g. 104857600, 100MiB, 1GB)", s)
	}
	return n * mult, nil
}

// ParseDuration reads a Go duration ("90m", "1h30m") or a number of days ("7d").
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 106751 {
			return 0, fmt.Errorf("%q is not a duration (e.g. 90m, 24h, 7d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (e.g. 90m, 24h, 7d)", s)
	}
	return d, nil
}
