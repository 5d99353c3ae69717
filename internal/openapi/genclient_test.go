package openapi_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
)

// TestGenclientDocumentCurrent fails when test/genclient/openapi.json, the document the
// generated client of test/genclient is made from, is not the document the server
// serves now (with info.version "genclient", as internal/openapi/gendoc writes it).
func TestGenclientDocumentCurrent(t *testing.T) {
	want, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "genclient")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../test/genclient/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("test/genclient/openapi.json differs from the API's OpenAPI document: " +
			"run `go generate ./...` in test/genclient (it rewrites the document and the client generated from it) and commit both")
	}
}
