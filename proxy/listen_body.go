package proxy

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// readBody reads a POST's body of at most limit bytes. A body whose length
// the request declares is read into one buffer of that size, with room for
// a line end, so that a large message is
// neither copied nor reallocated as it is read, as io.ReadAll's growing
// buffer does (issue 13, point 4). A longer body fails with
// *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	n := r.ContentLength
	if n < 0 || n > limit {
		return io.ReadAll(body)
	}
	buf := make([]byte, n, n+1)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
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
