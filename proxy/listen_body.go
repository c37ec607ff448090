package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// errOverBudget refuses a body that would take the bytes of bodies held
// past ListenOptions.MaxInFlight.
var errOverBudget = errors.New("too many bytes of requests in flight")

// bodyBudget counts the bytes of request bodies the proxy holds, across
// connections and sessions: from their arrival until the request has been
// handled (issue 25, item 2: fifty slow senders held 212 MiB). It is safe
// for concurrent use.
type bodyBudget struct {
	max  int64
	held atomic.Int64
	// observe, when set (by tests), is called with the count after each
	// change.
	observe func(held int64)
}

// take counts n more bytes held, unless that would pass max.
func (b *bodyBudget) take(n int64) bool {
	h := b.held.Add(n)
	if h > b.max {
		h = b.held.Add(-n)
		b.notify(h)
		return false
	}
	b.notify(h)
	return true
}

// give counts n bytes let go.
func (b *bodyBudget) give(n int64) {
	if n != 0 {
		b.notify(b.held.Add(-n))
	}
}

func (b *bodyBudget) notify(h int64) {
	if b.observe != nil {
		b.observe(h)
	}
}

// firstBodyBuf is the buffer a body is first read into; it doubles as
// bytes arrive.
const firstBodyBuf = 32 << 10

// readBody reads a POST's body of at most limit bytes, within timeout of
// its start (when timeout > 0). The buffer grows as bytes arrive, doubling
// up to the length the request declares (with room for a line end), so
// that a sender who declares 4 MiB and sends little holds little, and a
// large message is copied a few times at most, not once per read as
// io.ReadAll's growing buffer does (issue 13, point 4). Every byte of the
// buffer counts against budget until release is called, which the caller
// does once done with the body; on an error readBody releases it itself.
//
// A longer body fails with *http.MaxBytesError, one that takes longer than
// timeout with an error wrapping os.ErrDeadlineExceeded, and one over the
// budget with errOverBudget.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration, budget *bodyBudget) (body []byte, release func(), err error) {
	if timeout > 0 {
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
			// The deadline is the body's alone: a stream answering the
			// request must not end at it (net/http's background read
			// would take it for the host leaving).
			defer rc.SetReadDeadline(time.Time{})
		}
	}
	src := http.MaxBytesReader(w, r.Body, limit)
	want := limit + 1 // room for the byte past the limit that fails it
	if n := r.ContentLength; n >= 0 && n <= limit {
		want = n + 1
	}
	var held int64
	release = func() {
		budget.give(held)
		held = 0
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			size := max(2*int64(cap(buf)), firstBodyBuf)
			if size >= want-1 {
				size = want // the whole body, and room to see its end
			}
			if size <= int64(cap(buf)) {
				size = int64(cap(buf)) + firstBodyBuf // a body longer than it said
			}
			if !budget.take(size - held) {
				release()
				return nil, nil, errOverBudget
			}
			held = size
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, release, nil
		}
		if err != nil {
			release()
			return nil, nil, err
		}
	}
}

// maxPooledLine is the largest line buffer kept for the next line.
const maxPooledLine = 1 << 20

// lineBufs hold the lines written to a server's stdin, each with its line
// end, between one write and the next.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// writeWithEnd writes line and a line end to w in one write, through a buffer
// kept from line to line.
func writeWithEnd(w io.Writer, line []byte) (int, error) {
	bp := lineBufs.Get().(*[]byte)
	b := append(append((*bp)[:0], line...), '\n')
	n, err := w.Write(b)
	if cap(b) <= maxPooledLine {
		*bp = b[:0]
		lineBufs.Put(bp)
	}
	return n, err
}

// requestMeta returns what a request's params say in _meta
// (mcpmsg.ReadRequestMeta), without scanning params that cannot hold it:
// finding a member means moving past every value before it, a large
// tool call's arguments among them, while looking for the name's bytes is
// a fast search. A name spelled with escapes (\u005f…) holds a "\u".
func requestMeta(params []byte) mcpmsg.RequestMeta {
	if !bytes.Contains(params, []byte(`"_meta"`)) && !bytes.Contains(params, []byte(`\u`)) {
		return mcpmsg.RequestMeta{}
	}
	return mcpmsg.ReadRequestMeta(params)
}
