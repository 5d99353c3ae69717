package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// sendFramed sends body as a request whose Content-Length is length, which may be more
// than the body holds (then it closes its side of the connection), and reads the answer.
func sendFramed(t *testing.T, env *apptest.Env, path, token, ctype, body string, length int) answer {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, token, ctype, length, body)
	if length > len(body) {
		// The body ends short: the client hangs up its side. (Only then: net/http
		// cancels a request whose client hangs up after sending it whole.)
		conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	json.Unmarshal(b, &a.body)
	return a
}

// TestMultipartFraming: a multipart body that goes on after its closing boundary, or
// whose Content-Length promises more than comes after the boundary, is refused with 400
// on the files route and the runs route, and stores nothing: no file, no run, no input
// dir. A body that ends with its boundary and a line break is taken.
func TestMultipartFraming(t *testing.T) {
	const ctype = "multipart/form-data; boundary=B"
	part := func(field string) string {
		return "--B\r\nContent-Disposition: form-data; name=\"" + field + "\"; filename=\"a.txt\"\r\n\r\nhello!\r\n--B--"
	}
	type framing struct {
		name  string
		tail  string // after the closing boundary
		extra int    // bytes the Content-Length promises beyond the body sent
		code  string // "" for a body that is taken
	}
	cases := []framing{
		{"bytes after the boundary", "\r\nand then some more bytes", 0, "invalid_upload"},
		{"a second body after the first", "\r\n" + part("file") + "\r\n", 0, "invalid_upload"},
		{"short of the Content-Length", "\r\n", 100, "body_interrupted"},
		{"short of the Content-Length, no line break", "", 10, "body_interrupted"},
	}
	check := func(t *testing.T, a answer, c framing) {
		t.Helper()
		if c.code == "" {
			if a.status != 201 {
				t.Fatalf("%s: %d %s; want 201", c.name, a.status, a.raw)
			}
			return
		}
		e, _ := a.body["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		reason, _ := details["reason"].(string)
		if a.status != 400 || (a.errCode() != c.code && reason != c.code) || a.errMessage() == "" {
			t.Fatalf("%s: %d %s; want 400 %s", c.name, a.status, a.raw, c.code)
		}
	}

	t.Run("files", func(t *testing.T) {
		apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
			env := apptest.New(t, b)
			_, u := env.User(t, "u", "user")
			for _, c := range cases {
				body := part("file") + c.tail
				check(t, sendFramed(t, env, "/api/v1/files", u.Token, ctype, body, len(body)+c.extra), c)
			}
			if keys := storedKeys(t, env); len(keys) != 0 {
				t.Fatalf("refused bodies stored %v", keys)
			}
			if list := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); list.body["count"] != float64(0) {
				t.Fatalf("refused bodies are listed: %s", list.raw)
			}
			ok := framing{name: "the boundary and a line break", tail: "\r\n"}
			body := part("file") + ok.tail
			check(t, sendFramed(t, env, "/api/v1/files", u.Token, ctype, body, len(body)), ok)
		})
	})

	t.Run("runs", func(t *testing.T) {
		env := apptest.New(t, apptest.Backends[0])
		publish(t, env, "echo", echoTool)
		_, u := env.User(t, "u", "user")
		for _, c := range cases {
			body := part("files") + c.tail
			check(t, sendFramed(t, env, "/api/v1/tools/echo/runs", u.Token, ctype, body, len(body)+c.extra), c)
		}
		if list := send(t, env, "GET", "/api/v1/runs", u.Token, "", nil); list.body["count"] != float64(0) {
			t.Fatalf("refused bodies made runs: %s", list.raw)
		}
		if n := inputDirsLeft(t, env); n != 0 {
			t.Fatalf("%d input dirs left", n)
		}
	})
}
