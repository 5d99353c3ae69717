package web_test

import (
	"os"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestMain holds every request and answer of this package's tests to the API's OpenAPI
// document (apptest.CheckOpenAPI).
func TestMain(m *testing.M) {
	apptest.CheckOpenAPI()
	os.Exit(m.Run())
}
