package wire

import "time"

// FileVersion is one version of a staged file (docs/api.md "Versions"): the current one
// (Current, ReplacedAt null) or a previous one kept when the key was overwritten.
// VersionID reads it with ?version= on GET and HEAD of the file.
type FileVersion struct {
	VersionID   string     `json:"version_id"`
	Current     bool       `json:"current"`
	FileKey     string     `json:"file_key"`
	Name        string     `json:"name"`
	SizeBytes   int64      `json:"size_bytes"`
	ContentType string     `json:"content_type"`
	Checksum    string     `json:"checksum"`
	CreatedAt   time.Time  `json:"created_at"`
	ReplacedAt  *time.Time `json:"replaced_at"`
}

// FileVersionList is the answer of GET /api/v1/files/{key}/versions: the current
// version first, then the kept ones, the newest first.
type FileVersionList struct {
	FileKey  string        `json:"file_key"`
	Count    int           `json:"count"`
	Versions []FileVersion `json:"versions"`
}
