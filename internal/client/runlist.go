package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/wire"
)

// RunQuery picks runs for Runs: the caller's own, newest first, of one tool and in one
// status when those are set, up to Limit (0: the server's default) after Cursor.
type RunQuery struct {
	Tool   string
	Status string
	Limit  int
	Cursor string
}

// Runs returns one page of the caller's runs.
func (c *Client) Runs(ctx context.Context, q RunQuery) (wire.RunList, error) {
	v := url.Values{}
	for k, s := range map[string]string{"tool": q.Tool, "status": q.Status, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/api/v1/runs"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out wire.RunList
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// RunEvent is one server-sent event of a run (docs/api.md "Run events"): Kind is
// "status", "stdout", "stderr" or "notice", Data the event's JSON string, decoded.
type RunEvent struct {
	Kind string
	Data string
}

// maxEventLine bounds one line of the event stream: the server cuts a tool's line at
// 64 KiB, which JSON may write six times as long.
const maxEventLine = 1 << 20

// RunEvents follows run id's events, calling fn with each until the stream ends (after
// the run's final status) or fn returns an error. It returns nil when the stream ended
// by itself; a caller who needs the run's end checks that the last status was final.
func (c *Client) RunEvents(ctx context.Context, id string, fn func(RunEvent) error) error {
	resp, err := c.Request(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id)+"/events", nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var kind string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if kind == "" && len(data) == 0 {
				continue
			}
			ev := RunEvent{Kind: kind}
			if ev.Kind == "" {
				ev.Kind = "message"
			}
			raw := strings.Join(data, "\n")
			if json.Unmarshal([]byte(raw), &ev.Data) != nil {
				ev.Data = raw
			}
			kind, data = "", nil
			if err := fn(ev); err != nil {
				return err
			}
		case strings.HasPrefix(line, ":"): // a comment: the server's keep-alive
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the events of run %s: %w", id, err)
	}
	return nil
}

// RunJSON runs tool with inputs and, as its uploads, the caller's staged files named by
// fileKeys (POST …/runs with application/json), the server holding the request up to
// wait.
func (c *Client) RunJSON(ctx context.Context, tool string, inputs map[string]any, fileKeys []string, wait time.Duration) (Run, error) {
	if inputs == nil {
		inputs = map[string]any{}
	}
	body := struct {
		Inputs   map[string]any `json:"inputs"`
		FileKeys []string       `json:"file_keys,omitempty"`
	}{inputs, fileKeys}
	var r Run
	return r, c.Do(ctx, http.MethodPost, "/api/v1/tools/"+url.PathEscape(tool)+"/runs?wait="+wait.String(), body, &r)
}
