package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/version"
)

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		if code != 0 || out.String() != "skrip "+version.Version+"\n" {
			t.Errorf("skrip %s: exit %d, stdout %q, stderr %q; want skrip %s", args[0], code, out.String(), errOut.String(), version.Version)
		}
	}
}
