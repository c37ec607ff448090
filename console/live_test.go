package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/mcplog"
)

// The event stream tells a page of each session that appears or grows in
// the directory (issue 15, point 2), without a browser: the test reads the
// stream and waits on its events.
func TestEventsAsLogsGrow(t *testing.T) {
	dir := t.TempDir()
	src, err := OpenDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Source: src, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("/events: Content-Type %q", ct)
	}
	events := make(chan string, 16)
	gen := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var event string
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				event = e
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				switch event {
				case "gen":
					gen <- data
				case "session":
					events <- data
				}
			}
		}
		close(events)
	}()
	// The stream opens with the count of changes so far: none yet.
	if g := <-gen; g != "0" {
		t.Errorf("the stream's first gen: %q, want 0", g)
	}
	next := func(what string) string {
		t.Helper()
		select {
		case id, ok := <-events:
			if !ok {
				t.Fatalf("the event stream ended before %s", what)
			}
			return id
		case <-time.After(30 * time.Second): // a deadline, not a wait: the event comes at once or never
			t.Fatalf("no event for %s", what)
		}
		return ""
	}

	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	id := mcplog.SessionID(start, 4242)
	path := filepath.Join(dir, id+".jsonl")
	domain := "retail"
	w, err := mcplog.Create(path, mcplog.Header{Log: mcplog.Version, Session: id, StartedUnixMS: start.UnixMilli(), ServerCommand: []string{"shop"}, Domain: &domain, HostSession: "h1"}, start)
	if err != nil {
		t.Fatal(err)
	}
	w.Record(mcplog.FromClient, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := next("the new session"); got != id {
		t.Fatalf("event for %q, want %q", got, id)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"t_ms":5,"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_user","arguments":{"email":"a@b"}}}}`)
	fmt.Fprintln(f, `{"t_ms":9,"from":"server","message":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"user_1"}]}}}`)
	f.Close()
	if got := next("the grown session"); got != id {
		t.Fatalf("event for %q, want %q", got, id)
	}
	page, err := http.Get(base + "/session?id=" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(body), `<code class="tool">find_user</code>`) || !strings.Contains(string(body), "user_1") {
		t.Errorf("the session page lacks the call that arrived:\n%s", body)
	}
}
