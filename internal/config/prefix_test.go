package config

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// TestNATSPrefix: without SKRIP_NATS_PREFIX the buckets keep their names, so that an
// existing installation keeps its assets; with one, the buckets the operator did not
// name follow it, and one the operator named keeps its name.
func TestNATSPrefix(t *testing.T) {
	for _, c := range []struct {
		env          map[string]string
		files, work  string
		prefix       string
		filesDisplay string
	}{
		{nil, "skrip-files", "skrip-work", "", "skrip-files"},
		{map[string]string{"SKRIP_NATS_PREFIX": "team_b"}, "team_b-skrip-files", "team_b-skrip-work", "team_b", "team_b-skrip-files"},
		{map[string]string{"SKRIP_NATS_PREFIX": "b", "SKRIP_NATS_BUCKET": "mine"}, "mine", "b-skrip-work", "b", "mine"},
	} {
		l, err := Load(flags(t), envOf(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if l.NATSPrefix != c.prefix || l.NATSBucket != c.files || l.NATSWorkBucket != c.work {
			t.Errorf("%v: prefix %q, buckets %q and %q; want %q, %q and %q", c.env, l.NATSPrefix, l.NATSBucket, l.NATSWorkBucket, c.prefix, c.files, c.work)
		}
		for _, v := range l.Values {
			if v.Name == "nats-bucket" && v.Value != c.filesDisplay {
				t.Errorf("%v: skrip doctor would show the files bucket as %q, want %q", c.env, v.Value, c.filesDisplay)
			}
		}
	}
	if l, err := Load(flags(t, "--nats-prefix", "f"), envOf(nil)); err != nil || l.NATSWorkBucket != "f-skrip-work" {
		t.Errorf("--nats-prefix f: work bucket %q, %v", l.NATSWorkBucket, err)
	}
}

// TestNATSPrefixRefused: a prefix that cannot start a NATS name is refused when the
// settings are read, naming the setting and the rule.
func TestNATSPrefixRefused(t *testing.T) {
	for _, bad := range []string{"a.b", "a b", "p*", "p>", "_INBOX", "$JS", "-x", "ä",
		// "-" would let one installation's names start another's: with prefix
		// skrip-work-w-x, its work bucket skrip-work-w-x-skrip-work looks like the worker
		// bucket of worker x-skrip-work of the installation without a prefix.
		"skrip-work-w-x", "a-b", strings.Repeat("x", 33)} {
		_, err := Load(flags(t), envOf(map[string]string{"SKRIP_NATS_PREFIX": bad}))
		if err == nil || !strings.Contains(err.Error(), "SKRIP_NATS_PREFIX") || !strings.Contains(err.Error(), "NATS prefix") {
			t.Errorf("SKRIP_NATS_PREFIX=%q: %v, want an error naming the setting and the rule", bad, err)
		}
	}
}

// TestNATSPrefixRule: config refuses exactly the prefixes protocol.NewNames refuses.
func TestNATSPrefixRule(t *testing.T) {
	for _, p := range []string{"", "p", "P_1", "a-b", "9", "a.b", "a b", "a*", "a>", "_a", "$a", "-a", "a/b", "a\tb", "é", "a\x00",
		strings.Repeat("a", 32), strings.Repeat("a", 33)} {
		_, perr := protocol.NewNames(p)
		cerr := natsPrefix(&Config{}, p)
		if (perr == nil) != (cerr == nil) {
			t.Errorf("prefix %q: protocol says %v, config says %v", p, perr, cerr)
		}
	}
}
