package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skrip-dev/skrip/internal/wire"
)

// Report is a problem report (docs/api.md "Problem reports").
type Report = wire.Report

// ReportRun reports run id, the caller's, to its tool's maintainers, with an optional
// message and whether they may see the run's input files.
func (c *Client) ReportRun(ctx context.Context, id, message string, shareFiles bool) (Report, error) {
	var out Report
	return out, c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/report", wire.NewReport{Message: message, ShareFiles: shareFiles}, &out)
}

// Reports returns one page of the reports on the tools the caller maintains (an admin:
// all), newest first: up to limit (0: the server's default) after cursor ("" starts at
// the newest).
func (c *Client) Reports(ctx context.Context, limit int, cursor string) (wire.ReportList, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := "/api/v1/reports"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.ReportList
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// CloseReport closes report id, on a tool the caller maintains.
func (c *Client) CloseReport(ctx context.Context, id string) (Report, error) {
	var out Report
	return out, c.Do(ctx, http.MethodPost, "/api/v1/reports/"+url.PathEscape(id)+"/close", nil, &out)
}
