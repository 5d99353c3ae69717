package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/skrip-dev/skrip/internal/runner"
)

// Expire destroys this server's sandboxes whose idle timeout has passed, except those
// with an operation under way (which counts as activity when it ends), and returns how
// many it destroyed. In a cluster it destroys those of every worker, and removes the
// boxes no record knows.
func (s *Service) Expire(ctx context.Context) (int, error) {
	idle, err := s.st.IdleSandboxes(ctx, s.now())
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, b := range idle {
		if !s.here(b) {
			continue
		}
		destroyed, err := s.expireOne(ctx, b)
		if err != nil {
			errs = append(errs, err)
		}
		if destroyed {
			n++
		}
	}
	errs = append(errs, s.host.sweep(ctx))
	return n, errors.Join(errs...)
}

// Recover matches the boxes the runner still holds with the records of this server's
// sandboxes, at start: a record whose box did not survive (or that another runner made)
// goes, and so does a box without a record. A cluster's API node holds no boxes: it only
// empties its upload spool.
func (s *Service) Recover(ctx context.Context) error {
	if err := s.host.recover(ctx); err != nil {
		return err
	}
	if s.cfg.SpoolDir != "" {
		// Spool files are unlinked once made; one a crash caught in between is left.
		if err := os.RemoveAll(s.cfg.SpoolDir); err != nil {
			return fmt.Errorf("emptying the upload spool: %w", err)
		}
	}
	return nil
}

// recover matches the boxes the runner still holds with the records of this server's
// sandboxes, and says when those kept take more than the memory budget.
func (h *localHost) recover(ctx context.Context) error {
	s := h.s
	if err := h.recoverBoxes(ctx); err != nil {
		return err
	}
	reserved, err := s.Reserved(ctx)
	if err != nil {
		return err
	}
	if reserved > s.cfg.MemoryBudget {
		s.log.Warn("the workspaces of the sandboxes kept from before the restart take more than the memory budget; new sandboxes are refused until enough of them are gone",
			"reserved", runner.HumanBytes(reserved), "budget", runner.HumanBytes(s.cfg.MemoryBudget), "setting", BudgetSetting)
	}
	return nil
}

// recoverBoxes is Recover's matching of boxes and records.
func (h *localHost) recoverBoxes(ctx context.Context) error {
	s := h.s
	held, err := h.run.Boxes(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, id := range held {
		have[id] = true
	}
	records, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, b := range records {
		if b.Node != s.cfg.Node {
			continue
		}
		if b.Runner == s.runner && have[b.ID] {
			known[b.ID] = true
			continue
		}
		s.log.Warn("a sandbox did not survive the restart; removing its record", "sandbox", b.ID, "runner", b.Runner)
		if _, err := s.st.DeleteSandbox(ctx, b.ID); err != nil {
			return err
		}
	}
	for _, id := range held {
		if !known[id] {
			s.log.Info("removing a sandbox box without a record", "sandbox", id)
			if err := h.run.RemoveBox(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// DestroyAll destroys every sandbox this server holds: for tests, and for an operator
// retiring the machine.
func (s *Service) DestroyAll(ctx context.Context) error {
	records, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range records {
		if s.here(b) {
			errs = append(errs, s.destroy(ctx, b, "destroy all"))
		}
	}
	return errors.Join(errs...)
}
