package janitor_test

import (
	"reflect"
	"testing"

	"github.com/skrip-dev/skrip/internal/janitor"
	"github.com/skrip-dev/skrip/internal/wire"
)

// TestReportIsTheWireType (issue 31): a pass's report is the API's cleanup answer itself,
// not a second struct of the same 29 lines kept in step by hand.
func TestReportIsTheWireType(t *testing.T) {
	if got, want := reflect.TypeOf(janitor.Report{}), reflect.TypeOf(wire.CleanupReport{}); got != want {
		t.Fatalf("janitor.Report is %v, want the type wire.CleanupReport (%v)", got, want)
	}
}
