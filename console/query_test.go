package console

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// Query values the sessions page does not know get a clear message, not
// silence (issue 24, item 5); counts are written in the singular for one.
func TestSessionsQueryValues(t *testing.T) {
	ep := &episode.Episode{ID: "s1", Source: episode.SourceMCP, Servers: []episode.Server{{Name: "shop"}}}
	m := &memSource{rows: []store.Session{sessionRow(ep, 0, &store.Flow{})}, eps: map[string]*episode.Episode{"s1": ep}}
	s, err := New(Options{Source: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, want string }{
		{"/?flow=none", `flow &#34;none&#34;: the console was given no flow (start it with --flow FILE)`},
		{"/?offset=many", `offset &#34;many&#34;: want how many sessions to skip`},
		{"/?offset=-3", `offset &#34;-3&#34;: want how many sessions to skip`},
		{"/", `1 session;`},
	} {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest("GET", c.query, nil))
		if body := w.Body.String(); !strings.Contains(body, c.want) {
			t.Errorf("GET %s lacks %q:\n%s", c.query, c.want, body)
		}
	}
}
