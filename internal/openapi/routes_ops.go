package openapi

// Health is the answer of GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Ready is the answer of GET /readyz when every dependency answers.
type Ready struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// opsRoutes are the operational routes and the document itself.
func opsRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/healthz", Auth: Public, Summary: "The server is alive.", Answers: []Answer{OK(Health{})}},
		{Method: "GET", Path: "/readyz", Auth: Public, Summary: "The database, the blob store and the runner all answer (503 names those that do not).",
			Answers: []Answer{OK(Ready{})}, Errors: []int{503}},
		{Method: "GET", Path: "/metrics", Auth: Public, Summary: "Metrics in Prometheus's text format.",
			Answers: []Answer{{Status: 200, Media: "text/plain"}}},
		{Method: "GET", Path: "/api/v1/openapi.json", Auth: Public, Summary: "This document.",
			Answers: []Answer{{Status: 200, Media: "application/json"}}},
	}
}
