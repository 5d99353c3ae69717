package openapi

import "github.com/skrip-dev/skrip/internal/wire"

// reviewRoutes are the editor's lint and hints, version history, review and maintainers
// (docs/spec.md §6), and upload links (§4b).
func reviewRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/api/v1/editor/lint", Summary: "Lint a tool's source in a sandbox.",
			Body: JSON(wire.LintRequest{}), Answers: []Answer{OK(wire.LintResult{})}, Errors: []int{413, 429, 503}},
		{Method: "GET", Path: "/api/v1/editor/hints", Summary: "What the editor completes: the toolkit's functions.", Answers: []Answer{OK(wire.Hints{})}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/versions", Summary: "A tool's versions, with note, author, time, whether it compiles and its last sandbox result.",
			Answers: []Answer{OK(wire.VersionList{})}},
		{Method: "GET", Path: "/api/v1/tool-versions/{version}/diff", Summary: "The unified diff of source and schemas against another version.",
			Params: []Param{{Name: "against", In: "query", Required: true, Desc: "the other version's id"}}, Answers: []Answer{OK(wire.VersionDiff{})}},
		{Method: "POST", Path: "/api/v1/tool-versions/{version}/restore", Summary: "Make a new version from an old one.",
			Answers: []Answer{Created(wire.Version{})}},
		{Method: "POST", Path: "/api/v1/tool-versions/{version}/submit", Summary: "Submit a version for review (SKRIP_REVIEW=on).",
			Body: OptionalJSON(wire.NewSubmission{}), Answers: []Answer{Created(wire.Review{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/reviews", Summary: "The review queue (reviewers and admins).",
			Params:  []Param{Query("status", ""), QueryInt("limit", "reviews a page"), Query("cursor", "the previous page's next_cursor")},
			Answers: []Answer{OK(wire.ReviewList{})}},
		{Method: "GET", Path: "/api/v1/reviews/{id}", Summary: "Show a review.", Answers: []Answer{OK(wire.Review{})}},
		{Method: "POST", Path: "/api/v1/reviews/{id}/approve", Summary: "Approve a review: publishes the version.", Answers: []Answer{OK(wire.Review{})}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/reviews/{id}/request-changes", Summary: "Send a version back with a comment.",
			Body: JSON(wire.ChangeRequest{}), Answers: []Answer{OK(wire.Review{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/reviews", Summary: "A tool's reviews.", Answers: []Answer{OK(wire.ReviewList{})}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/maintainers", Summary: "A tool's maintainers.", Answers: []Answer{OK(wire.MaintainerList{})}},
		{Method: "POST", Path: "/api/v1/tools/{tool}/maintainers", Summary: "Add a maintainer: 201 when added, 200 when already one.", Body: JSON(wire.MaintainerRef{}),
			Answers: []Answer{OK(wire.Maintainer{}), Created(wire.Maintainer{})}, Errors: []int{409}},
		{Method: "DELETE", Path: "/api/v1/tools/{tool}/maintainers", Summary: "Remove the maintainer the body names.", Body: JSON(wire.MaintainerRef{}),
			Answers: []Answer{NoContent()}, Errors: []int{409}},
		{Method: "DELETE", Path: "/api/v1/tools/{tool}/maintainers/{user}", Summary: "Remove a maintainer.", Answers: []Answer{NoContent()}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/files/{key...}/upload-links", Mux: "POST /api/v1/files/{key...}", Summary: "Make an upload link to a key.",
			Params: []Param{ownerParam()}, Body: JSON(wire.NewUploadLink{}), Answers: []Answer{Created(wire.UploadLink{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/upload-links", Summary: "The caller's unexpired upload links.", Answers: []Answer{OK(wire.UploadLinkList{})}},
		{Method: "DELETE", Path: "/api/v1/upload-links/{id}", Summary: "Revoke an upload link.", Answers: []Answer{NoContent()}},
		{Method: "PUT", Path: "/u/{token}", Auth: Public, Summary: "Upload one file through an upload link.",
			Params: []Param{Query("filename", "the file's name")}, Body: Raw(),
			Answers: []Answer{Created(LinkUploaded{})}, Errors: []int{409, 410, 412, 413, 415, 429, 507}},
	}
}

// LinkUploaded is the answer of PUT /u/{token}: the file's name, size and checksum,
// never its owner or key.
type LinkUploaded struct {
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum"`
}
