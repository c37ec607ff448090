package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// memSource is a source of synthetic sessions held in memory, so that a
// benchmark measures the console's pages and not a store's reads (issue
// 13 measures those).
type memSource struct {
	rows []store.Session
	eps  map[string]*episode.Episode
	logs map[string][]string
}

func (m *memSource) Logs(id string) []string { return m.logs[id] }

var _ Source = (*memSource)(nil)

func (m *memSource) Episodes(_ context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	for _, r := range m.rows {
		if len(f.IDs) > 0 && !slices.Contains(f.IDs, r.ID) {
			continue
		}
		if err := fn(m.eps[r.ID]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Sessions(context.Context, episode.Filter) ([]store.Session, error) {
	return slices.Clone(m.rows), nil
}

func (m *memSource) Session(_ context.Context, id string) (*episode.Episode, *store.Session, *store.Flow, error) {
	for i := range m.rows {
		if m.rows[i].ID == id {
			return m.eps[id], &m.rows[i], &store.Flow{}, nil
		}
	}
	return nil, nil, nil, nil
}

func (m *memSource) Refresh(context.Context) ([]string, error) { return nil, nil }
func (m *memSource) Close() error                              { return nil }

// synthetic makes an episode of calls calls, one turn per three, every
// fourth call a lookup of the proxy's that the agent repeats.
func synthetic(id string, calls int, start time.Time) *episode.Episode {
	ep := &episode.Episode{ID: id, Source: episode.SourceMCP, Domain: "retail", HostSession: "host-" + id, Started: start,
		Servers: []episode.Server{{Name: "retail"}},
		Tools:   []episode.Tool{{Name: "get_order_details", Kind: episode.Read}, {Name: "cancel_pending_order", Kind: episode.Write}}}
	for i := 0; i < calls; i++ {
		by := episode.Agent
		if i%4 == 1 {
			by = episode.Proxy
		}
		c := &episode.Call{Index: i, ID: fmt.Sprint(i), Server: "retail", Tool: "get_order_details",
			Args: json.RawMessage(fmt.Sprintf(`{"order_id":"#W%d"}`, i/2)), By: by, Turn: i / 3}
		c.Result = &episode.Result{CallIndex: i, Text: fmt.Sprintf(`{"order_id": "#W%d", "status": "pending", "items": [{"name": "Office Chair", "price": 499.28}]}`, i/2)}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: int64(i * 10), Call: c},
			episode.Event{Type: episode.EventResult, TMS: int64(i*10 + 5), Result: c.Result})
		if i%3 == 0 {
			ep.Turns = append(ep.Turns, episode.Turn{Index: i / 3, StartMS: int64(i * 10)})
		}
		ep.Turns[len(ep.Turns)-1].Calls = append(ep.Turns[len(ep.Turns)-1].Calls, i)
	}
	return ep
}

func benchServer(b *testing.B, sessions, calls int) (*Server, *memSource) {
	b.Helper()
	m := &memSource{eps: map[string]*episode.Episode{}}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < sessions; i++ {
		id := fmt.Sprintf("20260301T%06d.000Z-%d", i, i)
		ep := synthetic(id, calls, start.Add(time.Duration(i)*time.Second))
		m.eps[id] = ep
		m.rows = append(m.rows, sessionRow(ep, 0, &store.Flow{}))
	}
	s, err := New(Options{Source: m})
	if err != nil {
		b.Fatal(err)
	}
	return s, m
}

func get(b *testing.B, h http.Handler, path string) {
	r := httptest.NewRequest("GET", path, nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
}

// BenchmarkSessionsPage renders the list over 10,000 sessions (issue 15,
// point 5): filtered, sorted newest first, a page of PageSize rows with
// each session's lookups judged (once; later renders reuse the verdicts,
// as the console does until a session changes).
func BenchmarkSessionsPage(b *testing.B) {
	s, _ := benchServer(b, 10_000, 12)
	h := s.Handler()
	get(b, h, "/")
	b.ResetTimer()
	for b.Loop() {
		get(b, h, "/")
	}
}

// BenchmarkSessionsPageCold is the first render of the list, when every
// shown session's lookups are judged afresh.
func BenchmarkSessionsPageCold(b *testing.B) {
	s, m := benchServer(b, 10_000, 12)
	h := s.Handler()
	ids := make([]string, len(m.rows))
	for i, r := range m.rows {
		ids[i] = r.ID
	}
	for b.Loop() {
		s.forget(ids)
		get(b, h, "/")
	}
}

// BenchmarkSessionPage renders a session of 1,000 calls (issue 15,
// point 5).
func BenchmarkSessionPage(b *testing.B) {
	s, m := benchServer(b, 1, 1000)
	h := s.Handler()
	path := "/session?id=" + m.rows[0].ID
	for b.Loop() {
		get(b, h, path)
	}
}

// BenchmarkSessionJSONBaseline writes the same session of 1,000 calls as
// JSON (what hoist sessions show --json does with it), the baseline the
// page's render is read against.
func BenchmarkSessionJSONBaseline(b *testing.B) {
	_, m := benchServer(b, 1, 1000)
	ep := m.eps[m.rows[0].ID]
	for b.Loop() {
		enc := json.NewEncoder(io.Discard)
		if err := enc.Encode(ep); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSessionsPageRows checks the benchmark's pages show what they should,
// so that the benchmark measures pages that work.
func TestSessionsPageRows(t *testing.T) {
	m := &memSource{eps: map[string]*episode.Episode{}}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < PageSize+5; i++ {
		id := fmt.Sprintf("s%03d", i)
		ep := synthetic(id, 8, start.Add(time.Duration(i)*time.Second))
		m.eps[id] = ep
		m.rows = append(m.rows, sessionRow(ep, 0, &store.Flow{}))
	}
	s, err := New(Options{Source: m})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	body := w.Body.String()
	if n := strings.Count(body, `<tr class="session"`); n != PageSize {
		t.Errorf("%d rows on the first page, want %d", n, PageSize)
	}
	// Newest first.
	if i, j := strings.Index(body, "s204"), strings.Index(body, "s005"); i < 0 || j < 0 || i > j {
		t.Errorf("newest first: s204 at %d, s005 at %d", i, j)
	}
	if !strings.Contains(body, `href="/?offset=200"`) {
		t.Error("no link to the older sessions")
	}
}

// BenchmarkSessionsPageStore is BenchmarkSessionsPage over a real store
// of 10,000 sessions, opened read-only as hoist console --store opens it:
// the store's read of the list and of the shown sessions' episodes
// included.
func BenchmarkSessionsPageStore(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var u store.Unit
	for i := 0; i < 10_000; i++ {
		u.Episodes = append(u.Episodes, synthetic(fmt.Sprintf("20260301T%06d.000Z-%d", i, i), 12, start.Add(time.Duration(i)*time.Second)))
	}
	if _, err := db.Put(context.Background(), u); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	src, err := OpenStore(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	s, err := New(Options{Source: src})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	get(b, h, "/")
	b.ResetTimer()
	for b.Loop() {
		get(b, h, "/")
	}
}
