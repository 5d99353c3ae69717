package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// rawAnswer sends raw on a fresh connection to env (while reading, so a server that
// answers before the request is all sent is heard) and reads one response.
func rawAnswer(t *testing.T, env *apptest.Env, raw string) (*http.Response, map[string]any) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(conn, raw)
	return readAnswer(t, conn)
}

func readAnswer(t *testing.T, conn net.Conn) (*http.Response, map[string]any) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("answer %d (%s) is not JSON: %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp, body
}

func errorOf(body map[string]any) (code, msg string) {
	e, _ := body["error"].(map[string]any)
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	return code, msg
}

// TestProtocolErrorsAreJSON sends requests that net/http refuses before any handler runs
// (header fields over the limit, malformed requests) and checks that each answer is the
// JSON of docs/spec.md §3, on a fresh connection and on one that already served a request.
func TestProtocolErrorsAreJSON(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.HTTPMaxHeaderBytes = 8 << 10
	env := apptest.Start(t, cfg)
	big := func(n int) string { return "X-Big: " + strings.Repeat("a", n) + "\r\n" }
	tests := []struct {
		name, raw string
		status    int
		code, msg string
	}{
		{"header fields over the limit", "GET /healthz HTTP/1.1\r\nHost: x\r\n" + big(20<<10) + "\r\n", 431, "too_large", "8192 bytes"},
		{"header fields far over the limit", "GET /healthz HTTP/1.1\r\nHost: x\r\n" + big(4<<20) + "\r\n", 431, "too_large", "8192 bytes"},
		{"not HTTP", "HELLO\r\n\r\n", 400, "invalid_request", "not valid HTTP"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_request", "missing required Host header"},
		{"bad Transfer-Encoding", "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "invalid_request", "nsupported transfer encoding"},
		{"bad version", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505, "invalid_request", "protocol version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawAnswer(t, env, tc.raw)
			code, msg := errorOf(body)
			if resp.StatusCode != tc.status || code != tc.code || !strings.Contains(msg, tc.msg) ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("answer %d %s %v, want %d %s with %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.code, tc.msg)
			}
		})
	}
	t.Run("after a served request", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		go io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"+big(20<<10)+"\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 431 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(string(b), `"too_large"`) {
			t.Errorf("second request: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	})
}

// TestSlowClients checks the HTTP timeouts against raw connections: header fields that
// trickle in past the header timeout are dropped; a body that stalls for the idle timeout
// gets 408 and nothing of it is stored; a body that trickles but never stalls that long
// is stored whole.
func TestSlowClients(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.HTTPHeaderTimeout = time.Second
		cfg.HTTPBodyIdleTimeout = 2 * time.Second
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "u", "user")
		addr := strings.TrimPrefix(env.URL, "http://")

		t.Run("header fields trickle", func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			closed := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(conn)
				closed <- b
			}()
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			// A byte every 250ms: the connection must be dropped long before 8s.
			for i := 0; ; i++ {
				select {
				case got := <-closed:
					if len(got) != 0 {
						t.Errorf("the server answered a request whose header never ended: %q", got)
					}
					return
				case <-time.After(250 * time.Millisecond):
				}
				if i == 32 {
					t.Fatal("header fields trickled for 8s with a 1s header timeout and the connection is still open")
				}
				conn.Write([]byte("a"))
			}
		})

		for _, route := range []struct{ name, head, body string }{
			{"raw body", "PUT /api/v1/files/files/stalled HTTP/1.1\r\n", strings.Repeat("x", 5000)},
			{"multipart body", "POST /api/v1/files HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XX\r\n",
				"--XX\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nfiles/stalled\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.txt\"\r\n\r\n" + strings.Repeat("x", 5000)},
		} {
			t.Run("stalled "+route.name, func(t *testing.T) {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				fmt.Fprintf(conn, "%sHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\n%s", route.head, u.Token, route.body)
				// Nothing more is sent.
				resp, body := readAnswer(t, conn)
				code, msg := errorOf(body)
				if resp.StatusCode != http.StatusRequestTimeout || code != "invalid_request" || !strings.Contains(msg, "sent nothing for 2s") {
					t.Errorf("stalled body: %d %v, want 408 saying how long it waited", resp.StatusCode, body)
				}
				if !resp.Close {
					t.Errorf("the 408 does not say Connection: close")
				}
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("after the 408 the connection is not closed: %v", err)
				}
				if files, _, err := env.Client(t, u.Token).Files(context.Background(), "", "", 0); err != nil || len(files) != 0 {
					t.Errorf("after a stalled upload the files are %+v, %v; want none", files, err)
				}
				if keys, err := env.App.Blobs.List(context.Background(), ""); err != nil || len(keys) != 0 {
					t.Errorf("after a stalled upload the blob store holds %v, %v", keys, err)
				}
			})
		}

		// A handler that answers without reading the body (here: no token) must not wait
		// for the rest of it: net/http reads what is left before it answers.
		t.Run("stalled body nobody reads", func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":")
			resp, body := readAnswer(t, conn)
			if code, _ := errorOf(body); resp.StatusCode != http.StatusUnauthorized || code != "unauthorized" || !resp.Close {
				t.Errorf("stalled body on a refused request: %d %v (close %v), want 401 and the connection closed", resp.StatusCode, body, resp.Close)
			}
		})

		t.Run("body trickles", func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			const content = "slow but steady, byte by byte"
			fmt.Fprintf(conn, "PUT /api/v1/files/files/steady HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", u.Token, len(content))
			// 29 bytes 250ms apart: 7s in all, well past the 2s idle timeout.
			for i := range len(content) {
				time.Sleep(250 * time.Millisecond)
				if _, err := conn.Write([]byte{content[i]}); err != nil {
					t.Fatalf("byte %d: %v", i, err)
				}
			}
			resp, body := readAnswer(t, conn)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("trickled upload: %d %v", resp.StatusCode, body)
			}
			var got strings.Builder
			if _, err := env.Client(t, u.Token).Download(context.Background(), "files/steady",
				func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil {
				t.Fatal(err)
			}
			if got.String() != content {
				t.Errorf("stored %q, want %q", got.String(), content)
			}
		})
	})
}
