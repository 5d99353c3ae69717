package run

// AdmitLint takes a lint's turn for userID as Lint does, so a test can hold lints
// running without racing a real one's end.
func (s *Service) AdmitLint(userID string) (func(), error) { return s.admitLint(userID) }
