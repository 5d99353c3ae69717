package openapi

import "github.com/skrip-dev/skrip/internal/wire"

// sandboxRoutes are agent sandboxes (docs/spec.md §9).
func sandboxRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/api/v1/sandboxes", Summary: "Create a sandbox.", Body: OptionalJSON(wire.NewSandbox{}),
			Answers: []Answer{Created(wire.Sandbox{})}, Errors: []int{409, 503, 507}},
		{Method: "GET", Path: "/api/v1/sandboxes", Summary: "The caller's sandboxes (an admin's ?all=true: everyone's).",
			Params: []Param{{Name: "all", In: "query", Type: "boolean"}}, Answers: []Answer{OK(wire.SandboxList{})}},
		{Method: "GET", Path: "/api/v1/sandboxes/{id}", Summary: "Show a sandbox.", Answers: []Answer{OK(wire.Sandbox{})}, Errors: []int{410}},
		{Method: "DELETE", Path: "/api/v1/sandboxes/{id}", Summary: "Destroy a sandbox.", Answers: []Answer{NoContent()}},
		{Method: "POST", Path: "/api/v1/sandboxes/{id}/exec", Summary: "Run a command in a sandbox (Accept: application/x-ndjson streams it).",
			Body:    JSON(wire.ExecRequest{}),
			Answers: []Answer{{Status: 200, JSON: wire.ExecResult{}, Media: wire.ExecNDJSON}}, Errors: []int{409, 410, 413}},
		{Method: "PUT", Path: "/api/v1/sandboxes/{id}/fs/{path...}", Summary: "Write a file into the workspace.", Body: Raw(),
			Answers: []Answer{Created(wire.Written{})}, Errors: []int{409, 410, 413, 507}},
		{Method: "GET", Path: "/api/v1/sandboxes/{id}/fs/{path...}", Summary: "Stream a file of the workspace.",
			Answers: []Answer{Bytes(200)}, Errors: []int{409, 410}},
		{Method: "POST", Path: "/api/v1/sandboxes/{id}/stage", Summary: "Copy a staged file into the workspace.", Body: JSON(wire.StageRequest{}),
			Answers: []Answer{OK(wire.Staged{})}, Errors: []int{409, 410, 507}},
		{Method: "POST", Path: "/api/v1/sandboxes/{id}/publish", Summary: "Copy a workspace file into the staging area.", Body: JSON(wire.PublishRequest{}),
			Params: []Param{ifMatch(), ifNoneMatch()}, Answers: []Answer{written(OK(wire.Published{}))}, Errors: []int{409, 410, 412, 413, 507}},
	}
}
