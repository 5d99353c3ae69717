package openapi

// Routes that other branches add at the same time as this table (docs/spec.md §4b, §6).
// Their wire types land with them: until then their bodies are described as objects.
// When a route's wire type exists, name it here as the other entries do.

// object is any JSON object.
type object map[string]any

func pendingRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/api/v1/editor/lint", Summary: "Lint a tool's source: {diagnostics: [{line, column, message, severity}]}.",
			Body: JSON(object{}), Answers: []Answer{OK(object{})}, Errors: []int{413}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/versions", Summary: "A tool's versions, with note, author, time, whether it compiles and its last sandbox result.",
			Answers: []Answer{OK(object{})}},
		{Method: "GET", Path: "/api/v1/tool-versions/{version}/diff", Summary: "The unified diff of source and schemas against another version.",
			Params: []Param{{Name: "against", In: "query", Required: true, Desc: "the other version's id"}}, Answers: []Answer{OK(object{})}},
		{Method: "POST", Path: "/api/v1/tool-versions/{version}/restore", Summary: "Make a new version from an old one.",
			Answers: []Answer{Created(object{})}},
		{Method: "POST", Path: "/api/v1/tool-versions/{version}/submit", Summary: "Submit a version for review (SKRIP_REVIEW=on).",
			Body: OptionalJSON(object{}), Answers: []Answer{OK(object{}), Created(object{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/reviews", Summary: "Versions waiting for review (reviewers and admins).", Answers: []Answer{OK(object{})}},
		{Method: "POST", Path: "/api/v1/reviews/{id}/approve", Summary: "Approve a review: publishes the version.", Answers: []Answer{OK(object{})}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/reviews/{id}/request-changes", Summary: "Send a version back with a comment.",
			Body: JSON(object{}), Answers: []Answer{OK(object{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/maintainers", Summary: "A tool's maintainers.", Answers: []Answer{OK(object{})}},
		{Method: "POST", Path: "/api/v1/tools/{tool}/maintainers", Summary: "Add a maintainer.", Body: JSON(object{}),
			Answers: []Answer{OK(object{}), Created(object{})}, Errors: []int{409}},
		{Method: "DELETE", Path: "/api/v1/tools/{tool}/maintainers/{user}", Summary: "Remove a maintainer.", Answers: []Answer{NoContent()}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/files/{key...}/upload-links", Mux: "POST /api/v1/files/{key...}", Summary: "Make an upload link to a key: {ttl, max_bytes, content_types?, uses?}.",
			Body: JSON(object{}), Answers: []Answer{Created(object{})}},
		{Method: "GET", Path: "/api/v1/upload-links", Summary: "The caller's upload links.", Answers: []Answer{OK(object{})}},
		{Method: "DELETE", Path: "/api/v1/upload-links/{id}", Summary: "Revoke an upload link.", Answers: []Answer{NoContent()}},
		{Method: "PUT", Path: "/u/{token}", Auth: Public, Summary: "Upload one file through an upload link.", Body: Raw(),
			Answers: []Answer{Created(object{}), OK(object{})}, Errors: []int{410, 413, 415, 507}},
	}
}
