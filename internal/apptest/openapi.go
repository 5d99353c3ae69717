package apptest

import (
	"sync"
	"sync/atomic"
	"testing"

	"net/http"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/openapi/openapicheck"
)

// checkOpenAPI is whether servers this test binary starts hold their traffic to the
// OpenAPI document: a test package's TestMain switches it on (CheckOpenAPI).
var checkOpenAPI atomic.Bool

// CheckOpenAPI makes every server the test binary starts check each request to a
// documented route, and each answer, against the API's OpenAPI document
// (internal/openapi/openapicheck): a mismatch fails the test that made the request,
// naming the route and what the validator found. Call it from TestMain.
func CheckOpenAPI() { checkOpenAPI.Store(true) }

// checker is built once per test binary: the document does not change.
var checker = sync.OnceValues(func() (*openapicheck.Checker, error) {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "test")
	if err != nil {
		return nil, err
	}
	return openapicheck.New(doc, openapi.Routes())
})

// openAPICheck wraps h with the OpenAPI checker when the test binary asked for it. A
// mismatch found after the test ended (a request still finishing) is not reported: the
// test cannot fail any more.
func openAPICheck(t testing.TB, h http.Handler) http.Handler {
	if !checkOpenAPI.Load() {
		return h
	}
	c, err := checker()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	var (
		mu   sync.Mutex
		done bool
	)
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
	})
	return c.Wrap(h, func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Errorf(format, args...)
		}
	})
}
