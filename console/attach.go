package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hoist-mcp/hoist/console/hold"
)

// The console's side of holding a frame (issue 15, point 3;
// docs/console.md, "Holding a frame"): a proxy started with
// hoist-mcp --console ADDR attaches with one full-duplex request,
// POST /hold/attach, and the two exchange JSON lines: the proxy says hello
// and sends each frame it holds; the console sends the breakpoints and a
// person's verdict on each frame. The proxy's end is proxy/console.go.

// attachMsg is one line of the attach protocol, either way.
type attachMsg struct {
	Type string `json:"type"` // hello, held, gone; breakpoints, verdict
	// hello
	Session string `json:"session,omitempty"`
	Server  string `json:"server,omitempty"`
	Modern  bool   `json:"modern,omitempty"`
	// held, gone, verdict
	N      int             `json:"n,omitempty"`
	Point  string          `json:"point,omitempty"` // before or after
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Frame  json.RawMessage `json:"frame,omitempty"`
	Why    string          `json:"why,omitempty"` // breakpoint, loop, error
	Action hold.Action     `json:"action,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	// Digest is the held frame's (hold.Digest): a verdict names the frame
	// it decides, and the proxy releases no other with it.
	Digest string `json:"digest,omitempty"`
	// breakpoints
	*Breakpoints
}

// Breakpoints say which frames an attached proxy holds.
type Breakpoints struct {
	Methods []string `json:"methods"`
	Tools   []string `json:"tools"`
	Errors  bool     `json:"errors"` // hold JSON-RPC errors and isError results
	Loop    bool     `json:"loop"`   // the loop hold (hold.Loop)
	Allow   []string `json:"allow"`  // tools the loop hold never holds
}

// board is the attached proxies and the frames they hold. It is shared by
// the attach handlers (one per proxy) and the pages, under its lock.
type board struct {
	mu      sync.Mutex
	next    int
	proxies map[int]*attached
	bp      Breakpoints
}

type attached struct {
	N       int
	Session string
	Server  string
	Modern  bool
	Held    []*heldFrame
	out     chan []byte // lines to the proxy; the attach handler writes them
}

type heldFrame struct {
	N      int
	Point  string
	ID     string
	Method string
	Why    string
	Frame  string // pretty
	Digest string // the proxy's hold.Digest of the frame, echoed in the verdict
}

func newBoard() *board {
	return &board{proxies: map[int]*attached{}, bp: Breakpoints{Methods: []string{}, Tools: []string{}, Allow: []string{}, Loop: true, Errors: true}}
}

func (b *board) add() *attached {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	a := &attached{N: b.next, out: make(chan []byte, 64)}
	b.proxies[a.N] = a
	return a
}

func (b *board) remove(a *attached) {
	b.mu.Lock()
	delete(b.proxies, a.N)
	b.mu.Unlock()
}

func line(m attachMsg) []byte {
	out, _ := json.Marshal(m)
	return append(out, '\n')
}

// attach serves one proxy's attachment until it or the console goes. When
// it goes, the proxy continues every frame it held (fail-open), so nothing
// here needs undoing but the board's entry.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		http.Error(w, "attaching needs a full-duplex connection (HTTP/1.1)", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.WriteHeader(http.StatusOK)
	a := s.board.add()
	defer func() { s.board.remove(a); s.hub.publish([]string{""}) }()
	s.board.mu.Lock()
	bp := s.board.bp
	s.board.mu.Unlock()
	w.Write(line(attachMsg{Type: "breakpoints", Breakpoints: &bp}))
	rc.Flush()

	msgs := make(chan attachMsg)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m attachMsg
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue // a line the console does not read is left alone
			}
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			s.board.take(a, m)
			s.hub.publish([]string{""})
		case l := <-a.out:
			if _, err := w.Write(l); err != nil {
				return
			}
			rc.Flush()
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

// take records what a proxy said.
func (b *board) take(a *attached, m attachMsg) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch m.Type {
	case "hello":
		a.Session, a.Server, a.Modern = m.Session, m.Server, m.Modern
	case "held":
		a.Held = append(a.Held, &heldFrame{N: m.N, Point: m.Point, ID: string(m.ID), Method: m.Method, Why: m.Why, Frame: indent(m.Frame), Digest: m.Digest})
	case "gone":
		a.Held = slices.DeleteFunc(a.Held, func(h *heldFrame) bool { return h.N == m.N })
	}
}

// verdict sends a person's action on a held frame to its proxy.
func (b *board) verdict(proxy, n int, act hold.Action, value json.RawMessage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.proxies[proxy]
	if a == nil {
		return fmt.Errorf("proxy %d is no longer attached: it continued its frames", proxy)
	}
	i := slices.IndexFunc(a.Held, func(h *heldFrame) bool { return h.N == n })
	if i < 0 {
		return fmt.Errorf("frame %d of proxy %d is not held", n, proxy)
	}
	select {
	case a.out <- line(attachMsg{Type: "verdict", N: n, Action: act, Value: value, Digest: a.Held[i].Digest}):
	default:
		return errors.New("the proxy is not reading its verdicts")
	}
	a.Held = slices.Delete(a.Held, i, i+1)
	return nil
}

// setBreakpoints changes the breakpoints and tells every attached proxy.
func (b *board) setBreakpoints(bp Breakpoints) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bp = bp
	l := line(attachMsg{Type: "breakpoints", Breakpoints: &bp})
	for _, a := range b.proxies {
		select {
		case a.out <- l:
		default: // a proxy that reads nothing gets the breakpoints when it next attaches
		}
	}
}

type holdsView struct {
	page
	Proxies     []attached
	Breakpoints Breakpoints
	Err         string
}

func (s *Server) holdsPage(w http.ResponseWriter, r *http.Request) {
	v := holdsView{page: s.page("Holds", "holds", "list"), Err: r.URL.Query().Get("err")}
	s.board.mu.Lock()
	for _, a := range s.board.proxies {
		c := *a
		c.Held = slices.Clone(a.Held)
		v.Proxies = append(v.Proxies, c)
	}
	v.Breakpoints = s.board.bp
	s.board.mu.Unlock()
	slices.SortFunc(v.Proxies, func(a, b attached) int { return a.N - b.N })
	s.render(w, "holds.html", v)
}

func (s *Server) postVerdict(w http.ResponseWriter, r *http.Request) {
	proxy, _ := strconv.Atoi(r.FormValue("proxy"))
	n, _ := strconv.Atoi(r.FormValue("n"))
	act, err := hold.ParseAction(r.FormValue("action"))
	var value json.RawMessage
	if err == nil && act == hold.Inject {
		value = injected(r.FormValue("value"))
	}
	if err == nil {
		err = s.board.verdict(proxy, n, act, value)
	}
	s.hub.publish([]string{""})
	back := "/holds"
	if err != nil {
		back += "?err=" + urlQuery(err.Error())
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// injected reads the value a person typed: JSON as it is, anything else as
// a string, which is what one types most.
func injected(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t != "" && json.Valid([]byte(t)) {
		var b bytes.Buffer
		if json.Compact(&b, []byte(t)) == nil {
			return b.Bytes()
		}
	}
	out, _ := json.Marshal(s)
	return out
}

func (s *Server) postBreakpoints(w http.ResponseWriter, r *http.Request) {
	s.board.setBreakpoints(Breakpoints{
		Methods: fields(r.FormValue("methods")), Tools: fields(r.FormValue("tools")), Allow: fields(r.FormValue("allow")),
		Loop: r.FormValue("loop") != "", Errors: r.FormValue("errors") != "",
	})
	s.hub.publish([]string{""})
	http.Redirect(w, r, "/holds", http.StatusSeeOther)
}

// fields splits a list a person typed, by commas or spaces; never nil, so
// that the proxy is sent [] rather than null.
func fields(s string) []string {
	return append([]string{}, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })...)
}
