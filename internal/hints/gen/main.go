// Command gen writes the helper modules' functions and help from docs/authoring.md as
// JSON (hints.ParseGuide): go generate ./internal/hints.
package main

import (
	"fmt"
	"os"

	"github.com/skrip-dev/skrip/internal/hints"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen GUIDE.md OUT.json")
		os.Exit(2)
	}
	md, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], hints.Encode(hints.ParseGuide(md)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
