// Command gendoc writes the API's OpenAPI document to a file (or stdout), as the
// server serves it but with the version "genclient", for tools that generate clients
// from it (test/genclient; docs/api.md "Generating a client").
//
//	go run ./internal/openapi/gendoc test/genclient/openapi.json
package main

import (
	"fmt"
	"os"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
)

// Version is the document's info.version: fixed, so the file changes only when the API
// does.
const Version = "genclient"

func main() {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), Version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
	if len(os.Args) < 2 {
		os.Stdout.Write(doc)
		return
	}
	if err := os.WriteFile(os.Args[1], doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
