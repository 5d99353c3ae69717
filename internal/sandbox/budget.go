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

// ShareSetting names the setting of one user's share of the budget, for messages.
const ShareSetting = "SKRIP_SANDBOX_USER_SHARE"

// One user's sandboxes reserve at most a share of the budget (docs/spec.md §12): without
// it, one user holding SKRIP_SANDBOX_MAX_PER_USER sandboxes idle for a day could reserve
// the whole budget, and everyone else's create got 507. The share is never less than one
// workspace of the largest size, so that on a small machine a user may still hold one
// sandbox of the default size while the budget has room.

// shareOf is the memory one user's workspaces may reserve together out of budget.
func (s *Service) shareOf(budget int64) int64 {
	if s.cfg.UserShare <= 0 {
		return budget
	}
	return max(int64(float64(budget)*s.cfg.UserShare), footprint(s.cfg.WorkspaceBytes))
}

// checkHeld refuses a sandbox to owner, who holds as many in list as one user may
// (store.ErrTooMany, as the insert would). It is asked before the budget and the share,
// since it says more than they do.
func (s *Service) checkHeld(owner store.User, list []store.Sandbox) error {
	held := 0
	for _, o := range list {
		if o.OwnerID == owner.ID {
			held++
		}
	}
	if held >= s.cfg.MaxPerUser {
		return store.ErrTooMany
	}
	return nil
}

// checkShare refuses a workspace of quota bytes for owner when, beside the workspaces of
// owner's sandboxes in list that count (those the budget covers), it would pass one
// user's share of budget.
func (s *Service) checkShare(owner store.User, list []store.Sandbox, counts func(store.Sandbox) bool, budget, quota int64) error {
	var reserved int64
	for _, o := range list {
		if o.OwnerID == owner.ID && counts(o) {
			reserved += footprint(LimitsOf(o).WorkspaceBytes)
		}
	}
	share, need := s.shareOf(budget), footprint(quota)
	if reserved+need <= share {
		return nil
	}
	free := max(share-reserved, 0)
	fits := largestFitting(free)
	hint := "delete one of your sandboxes (skrip sandbox rm ID), or wait for an idle one to be destroyed"
	if fits > 0 {
		hint = fmt.Sprintf("ask for a workspace of at most %s (limits.workspace_bytes %d), or %s", runner.HumanBytes(fits), fits, hint)
	}
	return errs.New(ErrShare, map[string]any{"setting": ShareSetting, "share": s.cfg.UserShare, "share_bytes": share, "budget_bytes": budget,
		"reserved_bytes": reserved, "workspace_bytes": quota, "needed_bytes": need, "available_bytes": free, "largest_workspace_bytes": fits},
		"your sandboxes' workspaces already reserve %s of the %s one user may (%s %g of the %s memory budget), and a workspace of %s, which takes up to %s with its files' metadata, does not fit; %s",
		runner.HumanBytes(reserved), runner.HumanBytes(share), ShareSetting, s.cfg.UserShare, runner.HumanBytes(budget),
		runner.HumanBytes(quota), runner.HumanBytes(need), hint)
}

// createReserved inserts b's record when its workspace fits in its owner's share of the
// memory budget and in the budget, beside those of this server's other sandboxes.
// Creates of this server take turns here: the sums read are the sums the record is added
// to.
func (s *Service) createReserved(ctx context.Context, b *store.Sandbox, owner store.User, quota int64) error {
	s.createMu.Lock()
	defer s.createMu.Unlock()
	return s.host.place(ctx, b, owner, quota)
}

// place checks b's workspace against this server's memory budget and its owner's share
// of it, and inserts b's record; the caller holds createMu.
func (h *localHost) place(ctx context.Context, b *store.Sandbox, owner store.User, quota int64) error {
	s := h.s
	list, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return err
	}
	var reserved int64
	for _, o := range list {
		if o.Node == s.cfg.Node {
			reserved += footprint(LimitsOf(o).WorkspaceBytes)
		}
	}
	if err := s.checkHeld(owner, list); err != nil {
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
	if err := s.checkShare(owner, list, func(o store.Sandbox) bool { return o.Node == s.cfg.Node }, budget, quota); err != nil {
		return err
	}
	return s.st.CreateSandbox(ctx, *b, s.cfg.MaxPerUser, s.cfg.MaxTotal)
}
