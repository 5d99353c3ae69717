package wire

import "time"

// FileInfo is a staged file (docs/spec.md §4). ExpiresAt is null for a file kept until deleted.
type FileInfo struct {
	FileKey     string     `json:"file_key"`
	Name        string     `json:"name"`
	SizeBytes   int64      `json:"size_bytes"`
	ContentType string     `json:"content_type"`
	Checksum    string     `json:"checksum"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	// VersionID names this version of the file (docs/api.md "Versions").
	VersionID string `json:"version_id,omitempty"`
}

// FileList is the answer of GET /api/v1/files: one page in key order. NextCursor is
// null on the last page.
type FileList struct {
	Count      int        `json:"count"`
	Files      []FileInfo `json:"files"`
	NextCursor *string    `json:"next_cursor"`
}

// Cleanup is the answer of POST /api/v1/admin/cleanup.
type Cleanup struct {
	Removed CleanupReport `json:"removed"`
}

// CleanupReport is what one janitor pass removed (the janitor's own Report is this
// type).
type CleanupReport struct {
	Files     int   `json:"files"`
	FileBytes int64 `json:"file_bytes"`
	// FileVersions are replaced versions of staged files whose bytes were kept for
	// readers that had them open, deleted once their grace period passed.
	FileVersions int `json:"file_versions"`
	// FileVersionsTrimmed are kept versions of staged files beyond SKRIP_FILES_VERSIONS
	// (after it was lowered), retired.
	FileVersionsTrimmed int `json:"file_versions_trimmed"`
	// FileLinks are share links of staged files that expired.
	FileLinks int `json:"file_links"`
	// Uploads are resumable uploads that expired unfinished; UploadBytes the bytes they
	// had received.
	Uploads       int   `json:"uploads"`
	UploadBytes   int64 `json:"upload_bytes"`
	SessionSets   int   `json:"session_sets"`
	SessionFiles  int   `json:"session_files"`
	SessionBytes  int64 `json:"session_bytes"`
	ArtifactRuns  int   `json:"artifact_runs"`  // runs whose artifacts expired
	Artifacts     int   `json:"artifacts"`      // expired artifacts
	ArtifactBytes int64 `json:"artifact_bytes"` // their bytes
	// BlobLeftovers are the blob store's own debris: temp files and unreferenced object
	// files (fs), or chunks of objects never committed (NATS).
	BlobLeftovers int `json:"blob_leftovers"`
	// OrphanSessionFiles and OrphanArtifacts are blobs under sessions/ and runs/ that no
	// row refers to.
	OrphanSessionFiles int   `json:"orphan_session_files"`
	OrphanArtifacts    int   `json:"orphan_artifacts"`
	SignIns            int64 `json:"sign_ins"`
	CLILogins          int64 `json:"cli_logins"` // `skrip login`s that expired
	// AuditEvents are audit log events past SKRIP_AUDIT_RETENTION; Invitations
	// invitations that expired over a day ago.
	AuditEvents int64 `json:"audit_events"`
	Invitations int64 `json:"invitations"`
	Sandboxes   int   `json:"sandboxes"`
}

// FileLink is a share link of a staged file (docs/api.md "Share links"). URL is set only
// in the answer that made the link: the token in it is not stored and cannot be had
// again. MaxDownloads is null for no limit; else the link serves at most MaxDownloads ×
// the file's size bytes, and BytesServed is how many it has.
type FileLink struct {
	ID           string    `json:"id"`
	FileKey      string    `json:"file_key"`
	URL          string    `json:"url,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	MaxDownloads *int64    `json:"max_downloads"`
	Downloads    int64     `json:"downloads"`
	BytesServed  int64     `json:"bytes_served"`
}

// FileLinkList is the answer of GET /api/v1/files/{key}/links: the file's unexpired
// links, the newest first.
type FileLinkList struct {
	Count int        `json:"count"`
	Links []FileLink `json:"links"`
}

// NewFileLink is the body of POST /api/v1/files/{key}/links. TTL is a Go duration or Nd.
type NewFileLink struct {
	TTL          string `json:"ttl"`
	MaxDownloads *int64 `json:"max_downloads,omitempty"`
}

// Upload is the answer of GET /api/v1/uploads/{id} (docs/api.md "Resumable uploads"):
// where a resumable upload stands, and the file it made once finished (null while
// unfinished, or when that file is gone since).
type Upload struct {
	UploadID   string     `json:"upload_id"`
	Key        string     `json:"key"`
	Offset     int64      `json:"offset"`
	SizeBytes  int64      `json:"size_bytes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	FinishedAt *time.Time `json:"finished_at"`
	File       *FileInfo  `json:"file"`
}

// NewUploadLink is the body of POST /api/v1/files/{key}/upload-links (docs/api.md
// "Upload links"). TTL is a Go duration or Nd; MaxBytes 0 or absent is the server's file
// limit, ContentTypes empty any type, Uses 0 or absent one.
type NewUploadLink struct {
	TTL          string   `json:"ttl"`
	MaxBytes     int64    `json:"max_bytes,omitempty"`
	ContentTypes []string `json:"content_types,omitempty"`
	Uses         int64    `json:"uses,omitempty"`
}

// UploadLink is an upload link; URL is there only when it was made.
type UploadLink struct {
	ID           string    `json:"id"`
	FileKey      string    `json:"file_key"`
	URL          string    `json:"url,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	MaxBytes     int64     `json:"max_bytes"`
	ContentTypes []string  `json:"content_types"`
	Uses         int64     `json:"uses"`
	Used         int64     `json:"used"`
}

// UploadLinkList is the answer of GET /api/v1/upload-links: the caller's unexpired
// upload links, the newest first.
type UploadLinkList struct {
	Count       int          `json:"count"`
	UploadLinks []UploadLink `json:"upload_links"`
}
