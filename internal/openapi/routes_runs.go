package openapi

import "github.com/skrip-dev/skrip/internal/wire"

func waitParam() Param {
	return Query("wait", "how long to wait for the run to end (a Go duration, at most 10m)")
}

// runRoutes are runs and problem reports (docs/spec.md §5, §6).
func runRoutes() []Route {
	runBody := Multipart(Field{Name: "files", File: true, Many: true}, Field{Name: "inputs", Desc: "a JSON object"})
	runBody.Optional = true // no body: a run without inputs or files
	runBody.JSON = wire.RunRequest{}
	return []Route{
		{Method: "POST", Path: "/api/v1/tools/{tool}/runs", Summary: "Run a tool's published version: 201 with the run once over, 202 while it runs.",
			Params: []Param{waitParam()}, Body: runBody,
			Answers: []Answer{Created(wire.Run{}), Accepted(wire.Run{})}, Errors: []int{409, 413, 429, 503, 507}},
		{Method: "GET", Path: "/api/v1/runs", Summary: "The caller's runs, newest first.",
			Params:  []Param{Query("tool", "a tool's id or slug"), Query("status", ""), QueryInt("limit", "runs a page"), Query("cursor", "the previous page's next_cursor")},
			Answers: []Answer{OK(wire.RunList{})}},
		{Method: "GET", Path: "/api/v1/runs/{run}", Summary: "Show a run, waiting up to ?wait= for its end.",
			Params: []Param{waitParam()}, Answers: []Answer{OK(wire.Run{})}},
		{Method: "GET", Path: "/api/v1/runs/{run}/artifacts/{path...}", Summary: "Stream a file the run left in output/.",
			Params: []Param{Header("Range", "")}, Answers: []Answer{Bytes(200, fileHeaders()...), Bytes(206, fileHeaders()...)}, Errors: []int{416}},
		{Method: "POST", Path: "/api/v1/runs/{run}/cancel", Summary: "Cancel a run.", Answers: []Answer{OK(wire.Run{}), Accepted(wire.Run{})}},
		{Method: "GET", Path: "/api/v1/runs/{run}/events", Summary: "Server-sent events: status changes and output lines until the run ends.",
			Answers: []Answer{{Status: 200, Media: "text/event-stream"}}},
		{Method: "POST", Path: "/api/v1/runs/{run}/report", Summary: "Report a problem with a run to the tool's maintainers.", Body: JSON(wire.NewReport{}),
			Answers: []Answer{Created(wire.Report{})}, Errors: []int{409, 429}},
		{Method: "GET", Path: "/api/v1/reports", Summary: "Problem reports the caller may see, newest first.",
			Params: []Param{QueryInt("limit", "reports a page"), Query("cursor", "the previous page's next_cursor")}, Answers: []Answer{OK(wire.ReportList{})}},
		{Method: "GET", Path: "/api/v1/reports/{id}", Summary: "Show a problem report.", Answers: []Answer{OK(wire.Report{})}},
		{Method: "POST", Path: "/api/v1/reports/{id}/close", Summary: "Close a problem report.", Answers: []Answer{OK(wire.Report{})}},
	}
}
