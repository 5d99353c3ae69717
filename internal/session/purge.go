package session

import (
	"context"
	"time"
)

// PurgeUser deletes every session file set of userID with its bytes (what deleting the
// user does; their sessions' rows go with the user's).
func (s *Service) PurgeUser(ctx context.Context, userID string) (int, error) {
	sets, err := s.st.UserSessionFileSets(ctx, userID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, set := range sets {
		files, _, err := s.remove(ctx, set, time.Time{})
		if err != nil {
			return n, err
		}
		n += files
	}
	return n, nil
}
