package console

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
)

// The Savings page charts sessions, hits and LLM turns saved per day (by
// the session's start, UTC) and the Hosts page tallies them per host
// (issue 25, item 12): two served sessions of two host sessions, the
// second moved a day later.
func TestSavingsPerDayAndHosts(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "testdata", "sessions", "flow")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.Name(), "20261130T000805.901Z-29526") {
			// A day later: 2026-12-01.
			b = []byte(strings.Replace(string(b), `"started_unix_ms":1795997285901`, `"started_unix_ms":1796083685901`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := OpenDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	flowFile := filepath.Join("..", "proxy", "testdata", "demo.flow.json")
	s, err := New(Options{Source: ls, Flows: []string{flowFile}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:8940"+path, nil))
		if w.Code != 200 {
			t.Fatalf("%s: %d\n%s", path, w.Code, w.Body)
		}
		b, _ := io.ReadAll(w.Body)
		return string(b)
	}
	list, err := ls.Sessions(context.Background(), episode.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("%d sessions, want 2", len(list))
	}
	savings := get("/savings?name=demo.flow")
	hosts := get("/hosts")
	days := map[string]bool{}
	for _, x := range list {
		// Each session's figures as hoist audit finds them alone.
		rep, err := audit.Run(context.Background(), loggedSource{ls}, s.flows[0].F, audit.Options{Filter: episode.Filter{IDs: []string{x.ID}}})
		if err != nil {
			t.Fatal(err)
		}
		day := x.Started.UTC().Format("2006-01-02")
		days[day] = true
		figures := fmt.Sprintf(`data-sessions="1" data-hits="%.1f" data-saved="%.1f"`, rep.Total.Counts.HitBounds.Est, rep.Total.Counts.SavedBounds.Est)
		if want := fmt.Sprintf(`<g class="day-bars" data-day="%s" %s>`, day, figures); !strings.Contains(savings, want) {
			t.Errorf("the Savings page has no %s", want)
		}
		if want := fmt.Sprintf(`<tr class="host-row" data-host="%s" %s>`, x.HostSession, figures); !strings.Contains(hosts, want) {
			t.Errorf("the Hosts page has no %s", want)
		}
		if want := fmt.Sprintf(`<g class="host-bars" data-host="%s" %s>`, x.HostSession, figures); !strings.Contains(hosts, want) {
			t.Errorf("the Hosts page's chart has no %s", want)
		}
	}
	if len(days) != 2 {
		t.Fatalf("sessions on %d days, want 2", len(days))
	}
	if n := strings.Count(savings, `class="day-bars"`); n != 2 {
		t.Errorf("%d days charted, want 2", n)
	}
}
