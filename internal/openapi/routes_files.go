package openapi

import "github.com/skrip-dev/skrip/internal/wire"

func ownerParam() Param {
	return Query("owner", "an admin addresses another user's files: a user id or name")
}

func ifMatch() Param {
	return Header("If-Match", "the file's ETag: write only if the file is still that version (412 precondition_failed otherwise)")
}

func ifNoneMatch() Param {
	return Header("If-None-Match", "*: create only, never overwrite (412 precondition_failed otherwise)")
}

// fileHeaders are the headers a download carries.
func fileHeaders() []string {
	return []string{"Content-Length", "X-Checksum", "ETag", "Content-Disposition", "Accept-Ranges"}
}

// written is a write's answer with the new file's ETag, for a conditional write after it.
func written(a Answer) Answer {
	a.Headers = append(a.Headers, "ETag")
	return a
}

// fileRoutes are file staging (docs/spec.md §4, §4b): files, share links, versions and
// resumable uploads.
func fileRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/api/v1/files", Summary: "Upload a file (multipart).",
			Params: []Param{ownerParam()},
			Body: Multipart(Field{Name: "file", File: true}, Field{Name: "key", Desc: "a key under files/; f_<ULID> when absent"},
				Field{Name: "ttl", Desc: "a Go duration or Nd"}, Field{Name: "content_type"}),
			Answers: []Answer{written(Created(wire.FileInfo{}))}, Errors: []int{413, 507}},
		{Method: "GET", Path: "/api/v1/files", Summary: "List the caller's files, in key order.",
			Params:  []Param{Query("prefix", "keys that start so"), QueryInt("limit", "files a page"), Query("cursor", "the previous page's next_cursor"), ownerParam()},
			Answers: []Answer{OK(wire.FileList{})}},
		{Method: "PUT", Path: "/api/v1/files/{key...}", Summary: "Upload the raw body to key.",
			Params:  []Param{Query("filename", "the original name"), Query("ttl", "a Go duration or Nd"), ownerParam(), ifMatch(), ifNoneMatch()},
			Body:    Raw(),
			Answers: []Answer{written(Created(wire.FileInfo{}))}, Errors: []int{412, 413, 507}},
		{Method: "GET", Path: "/api/v1/files/{key...}", Summary: "Stream a file's bytes (Range and conditional reads).",
			Params:  []Param{Query("version", "a kept version's version_id"), ownerParam(), Header("Range", ""), Header("If-Range", ""), Header("If-None-Match", "")},
			Answers: []Answer{Bytes(200, fileHeaders()...), Bytes(206, fileHeaders()...), {Status: 304}}, Errors: []int{416}},
		{Method: "HEAD", Path: "/api/v1/files/{key...}", Summary: "A file's headers, no body.",
			Params:  []Param{Query("version", "a kept version's version_id"), ownerParam()},
			Answers: []Answer{{Status: 200, Headers: fileHeaders()}, {Status: 304}}},
		{Method: "DELETE", Path: "/api/v1/files/{key...}", Summary: "Delete a file.",
			Params: []Param{ownerParam(), ifMatch()}, Answers: []Answer{NoContent()}, Errors: []int{412}},
		{Method: "POST", Path: "/api/v1/files/{key...}/links", Mux: "POST /api/v1/files/{key...}", Summary: "Make a share link of a file.",
			Params: []Param{ownerParam()}, Body: JSON(wire.NewFileLink{}), Answers: []Answer{Created(wire.FileLink{})}},
		{Method: "GET", Path: "/api/v1/files/{key...}/links", Mux: "GET /api/v1/files/{key...}", Summary: "A file's unexpired share links; the caller's file of the whole key, when there is one, is served instead.",
			Params: []Param{ownerParam()}, Answers: []Answer{{Status: 200, JSON: wire.FileLinkList{}, Media: "*/*"}}},
		{Method: "GET", Path: "/api/v1/links", Summary: "A file's share links.",
			Params: []Param{{Name: "key", In: "query", Required: true}, ownerParam()}, Answers: []Answer{OK(wire.FileLinkList{})}},
		{Method: "DELETE", Path: "/api/v1/links/{id}", Summary: "Revoke a share link.", Answers: []Answer{NoContent()}},
		{Method: "GET", Path: "/s/{token}", Auth: Public, Summary: "Download through a share link (Range supported).",
			Params:  []Param{Header("Range", ""), Header("If-Range", "")},
			Answers: []Answer{Bytes(200, fileHeaders()...), Bytes(206, fileHeaders()...), {Status: 304}}, Errors: []int{410, 416}},
		{Method: "HEAD", Path: "/s/{token}", Auth: Public, Mux: "GET /s/{token}", Summary: "A share link's headers, no body.",
			Answers: []Answer{{Status: 200, Headers: fileHeaders()}}, Errors: []int{410}},
		{Method: "GET", Path: "/api/v1/files/{key...}/versions", Mux: "GET /api/v1/files/{key...}", Summary: "A file's versions, the current first; the caller's file of the whole key, when there is one, is served instead.",
			Params: []Param{ownerParam()}, Answers: []Answer{{Status: 200, JSON: wire.FileVersionList{}, Media: "*/*"}}},
		{Method: "GET", Path: "/api/v1/file-versions", Summary: "A file's versions, the current first.",
			Params: []Param{{Name: "key", In: "query", Required: true}, ownerParam()}, Answers: []Answer{OK(wire.FileVersionList{})}},

		// Resumable uploads: the tus 1.0 protocol (tus.io); its headers are the protocol's.
		{Method: "POST", Path: "/api/v1/uploads/{$}", Summary: "Create a resumable upload (tus creation, creation-with-upload).",
			Params:  []Param{Header("Upload-Length", ""), Header("Upload-Metadata", "key, filename, filetype, ttl"), Header("Tus-Resumable", "")},
			Body:    &Body{Raw: true, Optional: true, Media: "application/offset+octet-stream"},
			Answers: []Answer{{Status: 201, Headers: []string{"Location", "Upload-Offset"}}},
			Errors:  []int{409, 412, 413, 507}},
		{Method: "OPTIONS", Path: "/api/v1/uploads/", Auth: Public, Summary: "tus discovery: version, extensions, size limit.",
			Answers: []Answer{{Status: 204, Headers: []string{"Tus-Version", "Tus-Extension", "Tus-Max-Size"}}, {Status: 200}}},
		{Method: "HEAD", Path: "/api/v1/uploads/{id}", Summary: "Where a resumable upload stands (tus).",
			Answers: []Answer{{Status: 200, Headers: []string{"Upload-Offset", "Upload-Length"}}}, Errors: []int{410}},
		{Method: "PATCH", Path: "/api/v1/uploads/{id}", Summary: "Send more bytes of a resumable upload (tus).",
			Params:  []Param{Header("Upload-Offset", ""), Header("Tus-Resumable", "")},
			Body:    &Body{Raw: true, Media: "application/offset+octet-stream"},
			Answers: []Answer{{Status: 204, Headers: []string{"Upload-Offset"}}}, Errors: []int{409, 410, 412, 413, 415, 507}},
		{Method: "DELETE", Path: "/api/v1/uploads/{id}", Summary: "Abandon a resumable upload (tus termination).",
			Answers: []Answer{NoContent()}, Errors: []int{410, 412}},
		{Method: "GET", Path: "/api/v1/uploads/{id}", Summary: "Where a resumable upload stands, and its file once finished.",
			Answers: []Answer{OK(wire.Upload{})}},
	}
}
