package sandbox

import (
	"context"
	"fmt"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// A sandbox's /workspace is a tmpfs: its files are memory of the machine, kept for as
// long as the sandbox lives. Each sandbox reserves the most its workspace can take (its
// quota, and the metadata of as many files as it may hold: runner.WorkspaceMemory)
// against the server's memory budget when it is created, and gives it back when its
// record goes (deleted, idle, lost). Each tmpfs is capped at that, so the workspaces
// together never hold more than the budget. An exec's processes and its /tmp are not reserved:
// they live only while the exec runs, within the sandbox's memory and /tmp limits.

// BudgetSetting names the setting of the memory budget, for messages.
const BudgetSetting = "SKRIP_SANDBOX_MEMORY_BUDGET"

// Shares of the machine's memory the budget gets by default and may get at most: the
// rest is for the server, its database and the processes of runs and execs.
const (
	defaultBudgetPercent = 50
	maxBudgetPercent     = 80
)

// MemoryBudget returns the memory budget of all workspaces together: setting, or half of
// the machine's memory m when setting is 0. A budget over 80% of m is refused, with an
// error naming the setting, its value and the machine's memory.
func MemoryBudget(setting int64, m runner.Memory) (int64, error) {
	most := m.Bytes / 100 * maxBudgetPercent
	if setting == 0 {
		return m.Bytes / 100 * defaultBudgetPercent, nil
	}
	if setting > most {
		return 0, fmt.Errorf("%s is %s, more than this machine can hold: the /workspace of every agent sandbox is a tmpfs, "+
			"that is memory, and the machine has %s; set it to at most %s (%d bytes, %d%%: the rest is for the server and the processes of runs and execs), "+
			"or to 0 for half of the machine's memory",
			BudgetSetting, runner.HumanBytes(setting), m, runner.HumanBytes(most), most, maxBudgetPercent)
	}
	return setting, nil
}

// footprint is the memory a workspace of quota bytes may take, metadata included.
func footprint(quota int64) int64 { return runner.WorkspaceMemory(quota) }

// largestFitting is the largest workspace quota whose footprint fits in free bytes, or
// 0 when none does.
func largestFitting(free int64) int64 {
	lo, hi := int64(0), free
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if footprint(mid) <= free {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Reserved returns the memory the workspaces of this server's sandboxes reserve: every
// record of this node counts until it is removed, box and all.
func (s *Service) Reserved(ctx context.Context) (int64, error) {
	list, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, b := range list {
		if b.Node == s.cfg.Node {
			n += footprint(LimitsOf(b).WorkspaceBytes)
		}
	}
	return n, nil
}

// createReserved inserts b's record when its workspace fits in the memory budget beside
// those of this server's other sandboxes. Creates of this server take turns here: the
// sum read is the sum the record is added to.
func (s *Service) createReserved(ctx context.Context, b *store.Sandbox, quota int64) error {
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if s.cluster != nil {
		return s.place(ctx, b, quota)
	}
	reserved, err := s.Reserved(ctx)
	if err != nil {
		return err
	}
	need, budget := footprint(quota), s.cfg.MemoryBudget
	if reserved+need > budget {
		free := max(budget-reserved, 0)
		fits := largestFitting(free)
		hint := "delete a sandbox (skrip sandbox rm ID), or wait for an idle one to be destroyed"
		if fits > 0 {
			hint = fmt.Sprintf("ask for a workspace of at most %s (limits.workspace_bytes %d), or %s", runner.HumanBytes(fits), fits, hint)
		}
		return errs.New(ErrBudget, map[string]any{"setting": BudgetSetting, "budget_bytes": budget, "reserved_bytes": reserved,
			"workspace_bytes": quota, "needed_bytes": need, "available_bytes": free, "largest_workspace_bytes": fits},
			"the workspaces of this server's sandboxes already take %s of its %s memory budget (%s), and a workspace of %s, which takes up to %s with its files' metadata, does not fit; %s",
			runner.HumanBytes(reserved), runner.HumanBytes(budget), BudgetSetting, runner.HumanBytes(quota), runner.HumanBytes(need), hint)
	}
	return s.st.CreateSandbox(ctx, *b, s.cfg.MaxPerUser, s.cfg.MaxTotal)
}
