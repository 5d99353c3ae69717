package genclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedClientCurrent runs the generator (oapi-codegen, pinned by this module's
// go.mod) on the committed document and fails when skripapi/client.gen.go differs from
// what it writes: the committed client is the generator's work, never edited by hand.
// internal/openapi's TestGenclientDocumentCurrent checks that openapi.json is the
// server's document.
func TestGeneratedClientCurrent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, "openapi.json")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("skripapi/client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("skripapi/client.gen.go is not what oapi-codegen makes of openapi.json: run `go generate ./...` in test/genclient and commit the result")
	}
}
