package worker

import (
	"testing"

	"github.com/skrip-dev/skrip/internal/sandbox"
)

// TestBudgetSettingIsSandboxs: the worker names the setting of its sandboxes' budget
// itself, not linking sandbox; the name stays the one the API node and the docs use.
func TestBudgetSettingIsSandboxs(t *testing.T) {
	if budgetSetting != sandbox.BudgetSetting {
		t.Fatalf("the worker names the budget %s, sandbox %s", budgetSetting, sandbox.BudgetSetting)
	}
}
