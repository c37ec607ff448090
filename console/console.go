package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/store"
)

//go:embed assets
var assets embed.FS

// HostsRequest is what the hosts page asks hoist init for: the
// configuration that puts hoist-mcp in front of Command.
type HostsRequest struct {
	Command []string
	// Listen is the address of one proxy for every host (init's --listen);
	// empty for a proxy per host over stdio.
	Listen string
	Domain string
	Record string
}

// Options configure a console.
type Options struct {
	// Source is where the sessions come from; the console closes it.
	Source Source
	// Flows are flow files, shown on the flow and savings pages and audited
	// in the list of sessions.
	Flows []string
	// Rule and Caps are how the flows are served (hoist-mcp's
	// --flow-threshold, --flow-decider and caps).
	Rule flow.Rule
	Caps flow.Caps
	// Token, when set, is the bearer token every request needs, and lets the
	// console listen beyond loopback.
	Token string
	// Poll is how often the source is refreshed; 0 means DefaultPoll.
	Poll time.Duration
	// Hosts writes what hoist init prints for a request; nil leaves the
	// hosts page without it.
	Hosts func(w io.Writer, req HostsRequest) error
	// Filter reads the list's filters as hoist sessions reads its
	// --domain, --host-session, --since and --until; nil understands no
	// dates.
	Filter func(domain, host, since, until string) (episode.Filter, error)
}

// Server is a console: its pages and the goroutine that polls its source.
type Server struct {
	opt   Options
	src   Source
	flows []*namedFlow
	tmpl  *template.Template
	hub   *hub
	board *board
	done  chan struct{}

	mu      sync.Mutex
	audits  map[string]map[string]*audit.Episode // by flow name, then session id
	records map[string]*earned.Earned            // what the proxy's lookups of each session earned
}

type namedFlow struct {
	Name string
	Path string
	F    *flow.Flow
}

// New makes a console over opt.Source, reading each of opt.Flows.
func New(opt Options) (*Server, error) {
	if opt.Source == nil {
		return nil, errors.New("no source of sessions")
	}
	s := &Server{opt: opt, src: opt.Source, hub: newHub(), board: newBoard(), done: make(chan struct{}),
		audits: map[string]map[string]*audit.Episode{}, records: map[string]*earned.Earned{}}
	names := map[string]bool{}
	for _, p := range opt.Flows {
		f, err := flow.Load(p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		for i := 2; names[name]; i++ {
			name = fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(p), ".json"), i)
		}
		names[name] = true
		s.flows = append(s.flows, &namedFlow{Name: name, Path: p, F: f})
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the console's templates: %w", err)
	}
	s.tmpl = t
	return s, nil
}

// Handler returns the console's pages, without the guard: Serve adds it.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServer(http.FS(static))))
	mux.HandleFunc("GET /{$}", s.sessionsPage)
	mux.HandleFunc("GET /session", s.sessionPage)
	mux.HandleFunc("GET /flow", s.flowPage)
	mux.HandleFunc("GET /savings", s.savingsPage)
	mux.HandleFunc("GET /hosts", s.hostsPage)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /holds", s.holdsPage)
	mux.HandleFunc("POST /holds/verdict", s.postVerdict)
	mux.HandleFunc("POST /holds/breakpoints", s.postBreakpoints)
	mux.HandleFunc("POST /hold/attach", s.attach)
	return mux
}

// Guarded returns the console's pages behind the guard of addr, the
// address served.
func (s *Server) Guarded(addr string) http.Handler {
	return guarded(addr, s.opt.Token, s.Handler())
}

// Serve serves the console on ln until ctx ends, and polls the source
// meanwhile. Without a token, ln must be a loopback address.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	if host, _, err := net.SplitHostPort(addr); err != nil || (s.opt.Token == "" && !IsLoopback(host)) {
		ln.Close()
		return fmt.Errorf("--addr %s: without --token-file the console serves only loopback addresses", addr)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	every := s.opt.Poll
	if every <= 0 {
		every = DefaultPoll
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.poll(ctx, every) }()
	srv := &http.Server{Handler: s.Guarded(addr), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	close(s.done) // ends the event streams, which Shutdown does not
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	srv.Shutdown(sctx)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.src.Close())
}

// forget drops what the console worked out about sessions that changed.
func (s *Server) forget(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.records, id)
		for _, m := range s.audits {
			delete(m, id)
		}
	}
}

func (s *Server) flowNamed(name string) *namedFlow {
	for _, f := range s.flows {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// judge returns the audit of each session of ids under f (nil: none), and
// what the proxy's own lookups earned (package earned, with the decisions
// of the session's flow logs), reading each session only the first time it
// is asked.
func (s *Server) judge(ctx context.Context, ids []string, f *namedFlow) (map[string]*audit.Episode, map[string]*earned.Earned, error) {
	s.mu.Lock()
	var missing []string
	for _, id := range ids {
		_, rec := s.records[id]
		aud := true
		if f != nil {
			_, aud = s.audits[f.Name][id]
		}
		if !rec || !aud {
			missing = append(missing, id)
		}
	}
	s.mu.Unlock()
	if len(missing) > 0 {
		type judged struct {
			rec *earned.Earned
			aud *audit.Episode
		}
		got := map[string]judged{}
		var served []*episode.Episode
		judge := func(ep *episode.Episode, ds []flow.Decision) error {
			j := judged{rec: earned.Of(ep, ds)}
			if f != nil {
				a, err := audit.WalkLogged(f.F, ep, ds, audit.Options{Rule: s.opt.Rule, Caps: s.opt.Caps})
				if err != nil {
					return err
				}
				j.aud = a
			}
			got[ep.ID] = j
			return nil
		}
		err := s.src.Episodes(ctx, episode.Filter{IDs: missing}, func(ep *episode.Episode) error {
			if earned.Served(ep) {
				served = append(served, ep) // judged with its flow log's decisions, below
				return nil
			}
			return judge(ep, nil)
		})
		if err != nil {
			return nil, nil, err
		}
		for _, ep := range served {
			_, _, fl, err := s.src.Session(ctx, ep.ID)
			if err != nil {
				return nil, nil, err
			}
			if err := judge(ep, decisionsOf(fl)); err != nil {
				return nil, nil, err
			}
		}
		s.mu.Lock()
		for id, j := range got {
			s.records[id] = j.rec
			if f != nil {
				if s.audits[f.Name] == nil {
					s.audits[f.Name] = map[string]*audit.Episode{}
				}
				s.audits[f.Name][id] = j.aud
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	auds, recs := map[string]*audit.Episode{}, map[string]*earned.Earned{}
	for _, id := range ids {
		recs[id] = s.records[id]
		if f != nil {
			auds[id] = s.audits[f.Name][id]
		}
	}
	return auds, recs, nil
}

// decisionsOf returns the decisions a session's flow logs hold, in order.
func decisionsOf(fl *store.Flow) []flow.Decision {
	if fl == nil {
		return nil
	}
	out := make([]flow.Decision, 0, len(fl.Decisions))
	for _, d := range fl.Decisions {
		out = append(out, d.FlowDecision)
	}
	return out
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, b.String())
}

func (s *Server) fail(w http.ResponseWriter, status int, err error) {
	http.Error(w, err.Error(), status)
}

// flowNames lists the flows for the navigation.
func (s *Server) flowNames() []string {
	var out []string
	for _, f := range s.flows {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}
