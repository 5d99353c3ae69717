package httpkit

import "net/url"

// ArtifactURL is where the API serves the artifact at path ("output/<name>") of run
// runID, each segment escaped. Run answers carry it, and the web UI links to it.
func ArtifactURL(runID, path string) string {
	return "/api/v1/runs/" + runID + "/artifacts/" + (&url.URL{Path: path}).EscapedPath()
}

// FileURL is where the API serves the staged file key, each segment escaped.
func FileURL(key string) string {
	return "/api/v1/files/" + (&url.URL{Path: key}).EscapedPath()
}
