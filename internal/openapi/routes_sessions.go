package openapi

import "github.com/skrip-dev/skrip/internal/wire"

// sessionRoutes are sessions, actions and the editor's sandbox runs (docs/spec.md §6, §7).
func sessionRoutes() []Route {
	runBody := Multipart(Field{Name: "files", File: true, Many: true}, Field{Name: "inputs", Desc: "a JSON object"})
	runBody.Optional = true // no body: a run without inputs or files
	runBody.JSON = wire.RunRequest{}
	return []Route{
		{Method: "POST", Path: "/api/v1/start_action", Summary: "Take a next action of a session's latest run.",
			Params: []Param{waitParam()}, Body: JSON(wire.ActionRequest{}),
			Answers: []Answer{Created(wire.ActionResult{}), Accepted(wire.ActionResult{})}, Errors: []int{409, 413, 429, 503}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/sessions/{context}", Summary: "A tool session's state and revision.", Answers: []Answer{OK(wire.Session{})}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/session-files", Summary: "The files a session keeps between its runs.",
			Params: []Param{Query("context", "the session's context (default)")}, Answers: []Answer{OK(wire.SessionFiles{})}},
		{Method: "DELETE", Path: "/api/v1/tools/{tool}/session-files", Summary: "Forget a session's files.",
			Params: []Param{Query("context", "the session's context (default)")}, Answers: []Answer{NoContent()}},
		{Method: "POST", Path: "/api/v1/editor/tool-versions/{version}/run-sandbox", Summary: "Run a version in its editor sandbox (author).",
			Params: []Param{waitParam()}, Body: runBody,
			Answers: []Answer{Created(wire.Run{}), Accepted(wire.Run{})}, Errors: []int{413, 429, 503, 507}},
		{Method: "GET", Path: "/api/v1/editor/tool-versions/{version}/session", Summary: "A version's sandbox session.", Answers: []Answer{OK(wire.Session{})}},
		{Method: "POST", Path: "/api/v1/editor/tool-versions/{version}/start-action", Summary: "Take a next action in a version's sandbox session.",
			Params: []Param{waitParam()}, Body: JSON(wire.ActionRequest{}),
			Answers: []Answer{Created(wire.ActionResult{}), Accepted(wire.ActionResult{})}, Errors: []int{409, 413, 429, 503}},
		{Method: "POST", Path: "/api/v1/editor/tool-versions/{version}/session/back", Summary: "Return the sandbox session to an earlier step.",
			Body: JSON(wire.GoBackRequest{}), Answers: []Answer{OK(wire.Session{})}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/editor/tool-versions/{version}/session/continue", Summary: "Carry another version's sandbox session over.",
			Body: JSON(wire.ContinueRequest{}), Answers: []Answer{OK(wire.Session{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/editor/tool-versions/{version}/settings", Summary: "The caller's settings for a version in the editor.",
			Answers: []Answer{OK(wire.Settings{})}},
		{Method: "PUT", Path: "/api/v1/editor/tool-versions/{version}/settings", Summary: "Save the caller's settings for a version in the editor.",
			Body: JSON(wire.SettingsUpdate{}), Answers: []Answer{OK(wire.Settings{})}},
	}
}
