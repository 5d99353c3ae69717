package staging

import "context"

// PurgeOwner deletes everything ownerID holds in the staging area, the way deleting each
// would: every file with its versions (their bytes retired, then freed at once: nobody
// may download them any more), every resumable upload with its parts' bytes, and the
// bytes of versions retired earlier. Share links go with their files. It is what
// deleting a user does.
func (s *Service) PurgeOwner(ctx context.Context, ownerID string) error {
	files, err := s.st.OwnerFiles(ctx, ownerID)
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := s.remove(ctx, f); err != nil {
			return err
		}
	}
	ups, err := s.st.OwnerUploads(ctx, ownerID)
	if err != nil {
		return err
	}
	for _, u := range ups {
		if _, err := s.terminate(ctx, u); err != nil {
			return err
		}
	}
	for {
		batch, err := s.st.OwnerRetiredBlobs(ctx, ownerID, 100)
		if err != nil || len(batch) == 0 {
			return err
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return err
			}
		}
	}
}
