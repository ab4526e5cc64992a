package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// TestEarlyErrorsDoNotWaitForTheBody: a client that sends headers and then
// only part of its body (chunked, never finished) gets its 401, 404, 405,
// 415 or 413 at once with `Connection: close`, and the connection is
// closed after it: an unauthenticated slow body cannot hold a connection.
// (Before, Go's server read the rest of the body before answering, so the
// answer never came.) The read deadline only bounds a hang.
func TestEarlyErrorsDoNotWaitForTheBody(t *testing.T) {
	r := sharedRelayFor(t)
	addr := strings.TrimPrefix(r.caddy.BaseURL, "http://")
	cases := []struct {
		name, method, path, headers string
		first                       int // bytes of the first chunk
		status                      int
	}{
		{"401 no token", "POST", "/v1/chat/completions", "", 10, 401},
		{"404 unknown route", "POST", "/v1/embeddings", "Authorization: Bearer " + relayToken + "\r\n", 10, 404},
		{"405 wrong method", "PUT", "/v1/chat/completions", "Authorization: Bearer " + relayToken + "\r\n", 10, 405},
		{"415 compressed", "POST", "/v1/chat/completions", "Authorization: Bearer " + relayToken + "\r\nContent-Encoding: gzip\r\n", 10, 415},
		{"413 past the limit", "POST", "/v1/chat/completions", "Authorization: Bearer " + relayToken + "\r\n", 300 << 10, 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// a bound on a hang, not a timing assertion
			_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
				tc.method, tc.path, addr, tc.headers, tc.first, strings.Repeat("x", tc.first))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body is unfinished: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if !resp.Close {
				t.Fatalf("answer without Connection: close (%v)", resp.Header)
			}
			if !strings.Contains(string(body), `"error"`) {
				t.Fatalf("not an OpenAI error: %s", body)
			}
			// closed by the relay, not by this test's deadline: a
			// timeout here means the relay kept the connection
			if n, err := br.Read(make([]byte, 1)); err == nil {
				t.Fatalf("the connection stayed open (read %d bytes)", n)
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the relay kept the connection open after its answer: %v", err)
			}
		})
	}
	// a complete request on a kept-alive connection is not closed
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, r.caddy.BaseURL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+relayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Close {
		t.Fatal("a request without a body was answered with Connection: close")
	}
}

// TestReadBodyTimeoutBoundsOnlyTheUpload: with the server timeouts the
// README recommends (`read_body`, `read_body_idle`), an answer that
// streams for longer than read_body is not cut: the timeouts bound only
// reading the request. It guards the documented configuration (Caddy
// clears the read deadline once the body is in; a handler that sets one
// afterwards would reinstate read_body and cut the answer).
func TestReadBodyTimeoutBoundsOnlyTheUpload(t *testing.T) {
	r := startRelayWith(t, "\tservers {\n\t\ttimeouts {\n\t\t\tread_header 10s\n\t\t\tread_body 1s\n\t\t\tread_body_idle 30s 1024\n\t\t}\n\t}", "")
	// 12 events 200ms apart: well past read_body
	text, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
		Model:    "cursor-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{userMsg("read-body [[slow:200ms]]")},
	}, true)
	if err != nil {
		t.Fatalf("a stream longer than read_body was cut: %v", err)
	}
	if !strings.Contains(text, "read-body") {
		t.Fatalf("answer %q", text)
	}
}

// TestRequestBytesBudget: with max_request_bytes_in_flight, a body counts
// from the start of its upload until the upstream has answered it. While
// A's upload is under way (its whole Content-Length counted), a chunked
// body that would take the bytes held past the budget gets 503
// server_busy with Retry-After as soon as it would; once A has been
// answered its bytes are given back and a large body is served. (A body
// of known length that does not fit waits for room first; the caddymodule
// tests cover that wait and the 503 after it.)
func TestRequestBytesBudget(t *testing.T) {
	r := startRelay(t, "max_request_bytes_in_flight 300KiB")
	big := func(tag string) []byte {
		return []byte(`{"model":"cursor-fast","stream":true,"messages":[{"role":"user","content":"` + tag + " " + strings.Repeat("y", 200<<10) + `"}]}`)
	}
	post := func(body io.Reader, n int64) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, r.caddy.BaseURL+"/v1/chat/completions", body)
		req.ContentLength = n // -1: sent chunked
		req.Header.Set("Authorization", "Bearer "+relayToken)
		req.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(req)
	}
	// A's upload stops halfway: its 200 KiB are counted. A asks for 100
	// Continue, so its client sends the body only once the relay reads it,
	// that is after the relay has counted it.
	a := big("budget-a")
	pr, pw := io.Pipe()
	aBody := &firstRead{r: pr, started: make(chan struct{})}
	aDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, r.caddy.BaseURL+"/v1/chat/completions", aBody)
		req.ContentLength = int64(len(a))
		req.Header.Set("Authorization", "Bearer "+relayToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}
		resp, err := client.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		aDone <- err
	}()
	go pw.Write(a[:len(a)/2])
	select {
	case <-aBody.started:
	case err := <-aDone:
		t.Fatalf("A ended before its upload: %v", err)
	}
	b, err := post(io.MultiReader(bytes.NewReader(big("budget-b"))), -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(b.Body)
	b.Body.Close()
	if b.StatusCode != http.StatusServiceUnavailable || b.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), `"code":"server_busy"`) {
		t.Fatalf("chunked B past the budget: %d %v %s", b.StatusCode, b.Header, raw)
	}
	small, err := post(strings.NewReader(`{"model":"cursor-fast","messages":[{"role":"user","content":"budget-small"}]}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	small.Body.Close()
	if small.StatusCode != http.StatusOK {
		t.Fatalf("a small body within the budget: %d", small.StatusCode)
	}
	if _, err := pw.Write(a[len(a)/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-aDone; err != nil {
		t.Fatalf("A: %v", err)
	}
	// A has been answered: its bytes are given back
	for _, n := range []int64{-1, 0} {
		body := big("budget-b-again")
		if n == 0 {
			n = int64(len(body))
		}
		b, err := post(bytes.NewReader(body), n)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, b.Body)
		b.Body.Close()
		if b.StatusCode != http.StatusOK {
			t.Fatalf("after A was answered (length %d): %d", n, b.StatusCode)
		}
	}
}

// firstRead is a body that closes started when it is first read.
type firstRead struct {
	r       io.Reader
	once    sync.Once
	started chan struct{}
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.started) })
	return f.r.Read(p)
}
