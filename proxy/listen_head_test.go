package proxy_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListenStreamHeadAlone: a request's event stream shows its head to
// the host even while the server has not answered, though an answer that
// comes at once shares the head's write (issue 13, point 4).
func TestListenStreamHeadAlone(t *testing.T) {
	cmd, env := fake("silent")
	p := startProxy(t, env, append([]string{"--listen", "127.0.0.1:0", "--"}, cmd...)...)
	url := strings.TrimSpace(p.readLine())
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(strings.TrimSpace(init16(1))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	// The timeout only keeps a broken proxy from hanging the test: the
	// head is due long before it.
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("no head for a call the server never answers: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("head %d %v, want 200, an event stream and a session id", resp.StatusCode, resp.Header)
	}
}
