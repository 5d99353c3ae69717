package clustertest

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/openapi/openapicheck"
)

// mismatches are what the OpenAPI check found wrong in the tests' API traffic and no
// test has reported yet: the API nodes are other processes, so the check sits in the
// client (http.DefaultTransport, which client.New and http.Get use).
var mismatches struct {
	sync.Mutex
	list []string
}

// checkOpenAPI makes every request the tests send through http.DefaultTransport, and its
// answer, held to the API's OpenAPI document (openapicheck.Checker.Transport).
func checkOpenAPI() error {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "test")
	if err != nil {
		return err
	}
	c, err := openapicheck.New(doc, openapi.Routes())
	if err != nil {
		return err
	}
	http.DefaultTransport = c.Transport(http.DefaultTransport, func(format string, args ...any) {
		mismatches.Lock()
		defer mismatches.Unlock()
		mismatches.list = append(mismatches.list, fmt.Sprintf(format, args...))
	})
	return nil
}

// reportMismatches fails t with the mismatches found since the last report.
func reportMismatches(t testing.TB) {
	for _, m := range takeMismatches() {
		t.Error(m)
	}
}

func takeMismatches() []string {
	mismatches.Lock()
	defer mismatches.Unlock()
	list := mismatches.list
	mismatches.list = nil
	return list
}

// leftMismatches prints the mismatches no test reported and says whether there were any.
func leftMismatches() bool {
	list := takeMismatches()
	for _, m := range list {
		fmt.Fprintln(os.Stderr, m)
	}
	return len(list) > 0
}
