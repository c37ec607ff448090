package mcplog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSessionID(t *testing.T) {
	start := time.Date(2026, 9, 23, 21, 20, 0, 123_456_789, time.UTC)
	if got, want := SessionID(start, 4242), "20260923T212000.123Z-4242"; got != want {
		t.Errorf("SessionID = %q, want %q", got, want)
	}
}

func TestHeaderJSON(t *testing.T) {
	h := Header{Log: Version, Session: "20260923T212000.123Z-4242", StartedUnixMS: 1790198400123,
		ServerCommand: []string{"npx", "-y", "some-mcp-server"}, Domain: StringOrNil("orders"), HostSession: "host-4211"}
	b, _ := json.Marshal(h)
	want := `{"hoist_mcp_log":2,"session":"20260923T212000.123Z-4242","started_unix_ms":1790198400123,"server_command":["npx","-y","some-mcp-server"],"domain":"orders","agent_model":null,"host_session":"host-4211"}`
	if string(b) != want {
		t.Errorf("header\n got %s\nwant %s", b, want)
	}
}

func TestWriterOrderAndFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{Log: Version, Session: "s"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lines := []struct {
		from string
		line string
	}{
		{FromClient, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{FromServer, `{"id":1, "jsonrpc":"2.0","result":{}}`},
		{FromServer, "Listening on stdio"},
		{FromServer, "bad \xff utf8\ttab \"quoted\" <b>"},
		{FromClient, "{\"method\":\"x\xfe\"}"},
	}
	for _, l := range lines {
		w.Record(l.from, []byte(l.line))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(got) != len(lines)+1 {
		t.Fatalf("log has %d lines, want %d:\n%s", len(got), len(lines)+1, data)
	}
	wantTail := []string{
		`"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"ping"}}`,
		`"from":"server","message":{"id":1, "jsonrpc":"2.0","result":{}}}`,
		`"from":"server","raw":"Listening on stdio"}`,
		`"from":"server","raw":"bad ` + "\ufffd" + ` utf8\ttab \"quoted\" <b>"}`,
		`"from":"client","raw":"{\"method\":\"x` + "\ufffd" + `\"}"}`,
	}
	for i, l := range got[1:] {
		if !strings.HasSuffix(l, wantTail[i]) {
			t.Errorf("line %d = %s, want suffix %s", i+2, l, wantTail[i])
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("line %d does not parse: %v", i+2, err)
		}
	}
}

func TestWriterConcurrentTimesNeverDecrease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{Log: Version}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				w.Record(FromClient, []byte(`{"method":"m"}`))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	last, n := int64(-1), 0
	for sc.Scan() {
		var e struct {
			TMS int64 `json:"t_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.TMS < last {
			t.Fatalf("t_ms decreased: %d after %d", e.TMS, last)
		}
		last = e.TMS
		n++
	}
	if n != 8000 {
		t.Errorf("got %d lines, want 8000", n)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, []byte("keep\n"), 0o600)
	if _, err := Create(path, Header{}, time.Now()); err == nil {
		t.Fatal("Create over an existing file succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "keep\n" {
		t.Errorf("existing file changed: %q", b)
	}
}

func TestScrubCommand(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"npx", "-y", "some-mcp-server"}, []string{"npx", "-y", "some-mcp-server"}},
		{[]string{"srv", "--api-key", "sk-123", "--verbose"}, []string{"srv", "--api-key", Redacted, "--verbose"}},
		{[]string{"srv", "--token=abc", "--port=80"}, []string{"srv", "--token=" + Redacted, "--port=80"}},
		{[]string{"env", "GITHUB_TOKEN=ghp_x", "HOME=/h", "srv"}, []string{"env", "GITHUB_TOKEN=" + Redacted, "HOME=/h", "srv"}},
		{[]string{"srv", "-H", "Authorization: Bearer abc"}, []string{"srv", "-H", "Authorization: " + Redacted}},
		{[]string{"srv", "Bearer abc"}, []string{"srv", "Bearer " + Redacted}},
		{[]string{"srv", "--password", "--next"}, []string{"srv", "--password", "--next"}},
		{[]string{"srv", "https://u:p@h.example/mcp?x=1&api_key=s3"}, []string{"srv", "https://h.example/mcp?x=1&api_key=" + Redacted}},
		{[]string{"srv", "--url=https://h.example/?token=t"}, []string{"srv", "--url=https://h.example/?token=" + Redacted}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ScrubCommand(tt.in)); diff != "" {
			t.Errorf("ScrubCommand(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestBorrowRecycle(t *testing.T) {
	for _, n := range []int{1, 100, 128, 129, 1 << 20, 1<<20 + 1} {
		b := Borrow(n)
		if len(b) != n || cap(b) < n {
			t.Fatalf("Borrow(%d): len %d cap %d", n, len(b), cap(b))
		}
		if n <= 1<<20 && cap(b)&(cap(b)-1) != 0 {
			t.Errorf("Borrow(%d): cap %d is not a power of two", n, cap(b))
		}
		recycle(b)
		if c := Borrow(n); len(c) != n {
			t.Errorf("Borrow(%d) after recycle: len %d", n, len(c))
		}
	}
}
