package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// TestReadBody: a body is read whole whether or not the request declares
// its length, and one over the limit fails as too large either way.
func TestReadBody(t *testing.T) {
	const limit = 64
	small := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name     string
		body     string
		declared bool
		tooLarge bool
	}{
		{"declared", small, true, false},
		{"chunked", small, false, false},
		{"empty", "", true, false},
		{"declared, too large", strings.Repeat("x", limit+1), true, true},
		{"chunked, too large", strings.Repeat("x", limit+1), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *http.Request
			if tc.declared {
				r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			} else {
				// No length known beforehand, as with chunked encoding.
				r = httptest.NewRequest(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader(tc.body)))
				r.ContentLength = -1
			}
			budget := &bodyBudget{max: 1 << 20}
			got, release, err := readBody(httptest.NewRecorder(), r, limit, 0, budget)
			if err == nil {
				if budget.held.Load() < int64(len(got)) {
					t.Errorf("%d bytes held for a body of %d", budget.held.Load(), len(got))
				}
				release()
			}
			if n := budget.held.Load(); n != 0 {
				t.Errorf("%d bytes held once released", n)
			}
			var mbe *http.MaxBytesError
			switch {
			case tc.tooLarge && !errors.As(err, &mbe):
				t.Fatalf("readBody = %q, %v; want a *http.MaxBytesError", got, err)
			case !tc.tooLarge && (err != nil || string(got) != tc.body):
				t.Fatalf("readBody = %q, %v; want %q", got, err, tc.body)
			}
		})
	}
}

// TestWriteEvent: events written one after another, through the buffer
// they share, each carry their own message whole, a small one after a
// large one included.
func TestWriteEvent(t *testing.T) {
	rec := httptest.NewRecorder()
	large := bytes.Repeat([]byte("y"), 100<<10)
	msgs := [][]byte{[]byte(`{"a":1}`), large, []byte(`{"b":2}`)}
	var want bytes.Buffer
	for _, m := range msgs {
		if err := writeEvent(rec, m); err != nil {
			t.Fatal(err)
		}
		want.WriteString("event: message\ndata: ")
		want.Write(m)
		want.WriteString("\n\n")
	}
	if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
		t.Errorf("events differ from the messages: got %d bytes, want %d", rec.Body.Len(), want.Len())
	}
	if !rec.Flushed {
		t.Error("events were not flushed")
	}
}

// TestWriteWithEnd: a line and its end reach the writer in one write, and
// the buffer kept between lines leaves nothing of one line in the next.
func TestWriteWithEnd(t *testing.T) {
	var w writes
	for _, line := range []string{strings.Repeat("z", 5000), "a", ""} {
		if _, err := writeWithEnd(&w, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{strings.Repeat("z", 5000) + "\n", "a\n", "\n"}
	if len(w) != len(want) {
		t.Fatalf("%d writes, want %d", len(w), len(want))
	}
	for i := range want {
		if w[i] != want[i] {
			t.Errorf("write %d = %.40q, want %.40q", i, w[i], want[i])
		}
	}
}

// writes keeps each write apart.
type writes []string

func (w *writes) Write(p []byte) (int, error) {
	*w = append(*w, string(p))
	return len(p), nil
}

// TestRequestMeta: the search that skips params without _meta gives what
// mcpmsg.ReadRequestMeta gives, for params with and without one.
func TestRequestMeta(t *testing.T) {
	for _, params := range []string{
		`{"name":"echo","arguments":{"message":"` + strings.Repeat("m", 5000) + `"}}`,
		`{"name":"echo","arguments":{"message":"a"},"_meta":{"progressToken":7}}`,
		`{"name":"echo","arguments":{"message":"_meta"},"_meta":{"progressToken":"t"}}`,
		`{"name":"echo","_met\u0061":{"progressToken":8}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{}`, ``,
	} {
		got, want := requestMeta([]byte(params)), mcpmsg.ReadRequestMeta([]byte(params))
		if string(got.ProgressToken) != string(want.ProgressToken) || got.ProtocolVersion != want.ProtocolVersion || got.ClientName != want.ClientName {
			t.Errorf("requestMeta(%.60s) = %+v, ReadRequestMeta %+v", params, got, want)
		}
	}
	if requestMeta([]byte(`{"_meta":{"progressToken":7}}`)).ProgressToken == nil {
		t.Error("requestMeta misses a progressToken")
	}
}

// slowListener serves a listener with lo's limits (ReadTimeout and
// MaxInFlight set) on a loopback port, with RunListen's HTTP server, and
// returns it. seen gets each count of body bytes held, as it changes.
func slowListener(t *testing.T, lo ListenOptions) (l *listener, seen chan int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// What a request reaches before it needs a session: the limits of who
	// may connect and of bodies.
	l = &listener{lo: lo, addr: ln.Addr().String(), d: &diag{w: io.Discard}, bodies: &bodyBudget{max: lo.MaxInFlight}}
	if l.bodies.max == 0 {
		l.bodies.max = DefaultListenInFlight
	}
	seen = make(chan int64, 1<<16)
	l.bodies.observe = func(n int64) { seen <- n }
	srv := l.httpServer()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l, seen
}

// slowPost opens a connection to addr and sends a POST's head declaring
// length bytes of body, then sent bytes of it, and stalls there.
func slowPost(t *testing.T, addr string, length, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, length)
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(bytes.Repeat([]byte(" "), sent)); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads what the proxy answers on c until it closes c, at most a
// generous bound, which fails the test: it returns the status line.
func answer(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the proxy did not close the connection: %v (read %q)", err, got)
	}
	status, _, _ := strings.Cut(string(got), "\r\n")
	return status
}

// waitHeld waits for the count of body bytes held to reach at least (or,
// with atMost, at most) n.
func waitHeld(t *testing.T, seen chan int64, n int64, atMost bool) {
	t.Helper()
	bound := time.After(30 * time.Second)
	for {
		select {
		case h := <-seen:
			if !atMost && h >= n || atMost && h <= n {
				return
			}
		case <-bound:
			t.Fatalf("the proxy never held %d bytes of bodies (at most: %v)", n, atMost)
		}
	}
}

// TestSlowBodyCutOff sends 3 MiB of a 4 MiB body and stalls (issue 25, item
// 2: twenty such connections held 59 MiB for more than 90 s). The proxy
// must answer 408 and close the connection once --listen-read-timeout has
// passed, and let go of what it held: its count of body bytes in flight
// goes back to 0.
func TestSlowBodyCutOff(t *testing.T) {
	l, seen := slowListener(t, ListenOptions{ReadTimeout: time.Second})
	c := slowPost(t, l.addr, MaxListenBody, 3<<20)
	if status := answer(t, c); !strings.Contains(status, " 408 ") {
		t.Errorf("answered %q, want 408", status)
	}
	// The handler counted what it held, and let it go, before the
	// connection closed.
	var most int64
	for len(seen) > 0 {
		most = max(most, <-seen)
	}
	if most == 0 {
		t.Error("the proxy never counted the bytes it held")
	}
	if n := l.bodies.held.Load(); n != 0 {
		t.Errorf("%d bytes of the cut-off body still held", n)
	}
}

// TestSlowHeadCutOff sends half a request head and stalls: the connection is
// closed once --listen-read-timeout has passed.
func TestSlowHeadCutOff(t *testing.T) {
	l, _ := slowListener(t, ListenOptions{ReadTimeout: time.Second})
	c, err := net.Dial("tcp", l.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+l.addr+"\r\n")
	answer(t, c)
}

// TestBodiesOverBudget: bodies being read count against one budget across
// connections and sessions. A body that would take the proxy past it is
// refused with 503 and Retry-After, and the budget is whole again once the
// stalled connection that filled it has gone.
func TestBodiesOverBudget(t *testing.T) {
	l, seen := slowListener(t, ListenOptions{ReadTimeout: time.Minute, MaxInFlight: 1 << 20})
	filler := slowPost(t, l.addr, MaxListenBody, 768<<10)
	waitHeld(t, seen, 768<<10, false)

	late := slowPost(t, l.addr, 600<<10, 600<<10)
	late.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(late), nil)
	if err != nil {
		t.Fatalf("reading the answer to a body over the budget: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a body over the budget: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	filler.Close()
	waitHeld(t, seen, 0, true)
	ok := slowPost(t, l.addr, 2, 0)
	io.WriteString(ok, "{}")
	ok.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(ok), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest { // read whole, and no JSON-RPC message
		t.Errorf("a small body once the budget is free: %d, want 400", resp.StatusCode)
	}
}

// TestReadBodyHoldsWhatArrived: a body is held as its bytes arrive. One that
// declares 4 MiB and ends after 100 KiB never held more than twice what came
// (and lets it go, with the error); one that sends what it declared is read
// into a buffer of that length and a byte, the last it grew to.
func TestReadBodyHoldsWhatArrived(t *testing.T) {
	budget := &bodyBudget{max: 64 << 20}
	var most int64
	budget.observe = func(h int64) { most = max(most, h) }
	short := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat(" ", 100<<10)))
	short.ContentLength = 4 << 20
	// As net/http's body reader ends one shorter than it declared.
	short.Body = io.NopCloser(io.MultiReader(short.Body, failing{io.ErrUnexpectedEOF}))
	if _, _, err := readBody(httptest.NewRecorder(), short, MaxListenBody, 0, budget); err == nil {
		t.Fatal("a body cut short read without an error")
	}
	if most > 2*(100<<10) || budget.held.Load() != 0 {
		t.Errorf("a body that sent 100 KiB of 4 MiB: held %d at most, %d after; want at most %d, then 0", most, budget.held.Load(), 2*(100<<10))
	}

	whole := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat(" ", 3<<20)))
	got, release, err := readBody(httptest.NewRecorder(), whole, MaxListenBody, 0, budget)
	if err != nil || len(got) != 3<<20 {
		t.Fatalf("readBody = %d bytes, %v", len(got), err)
	}
	if cap(got) != 3<<20+1 || budget.held.Load() != 3<<20+1 {
		t.Errorf("a body of 3 MiB: capacity %d, %d held; want %d", cap(got), budget.held.Load(), 3<<20+1)
	}
	release()
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
