package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
)

// runUpstream proxies a stdio host to a Streamable HTTP server (--upstream):
// each line the host writes is POSTed, and whatever the server sends comes
// back to the host as lines. It returns 0 once the session has ended.
func (s *session) runUpstream(ctx context.Context, st Streams) int {
	var outMu sync.Mutex
	hostGone := false
	write := func(buf []byte) {
		outMu.Lock()
		defer outMu.Unlock()
		if hostGone {
			return
		}
		if _, err := st.Out.Write(buf); err != nil {
			hostGone = true
		}
		s.tel.ToHost(buf)
	}
	a := s.active
	// Over stdio every message is the host's to read, whichever stream it
	// came on.
	toHost := func(from string, line []byte, _ json.RawMessage) {
		buf := make([]byte, len(line)+1)
		copy(buf, line)
		buf[len(line)] = '\n'
		if s.rec != nil {
			s.rec.Record(from, bytes.Clone(line)) // the recorder's own: it recycles it
		}
		if s.opts.Trace {
			s.d.say("trace server -> host %d B %s", len(buf), describe(jsonrpc.Classify(line)))
		}
		if from == mcplog.FromServer {
			s.tel.FromServer(line, false) // the proxy's lookups end here; the host's in write
		}
		if c := s.console; c != nil && from == mcplog.FromServer {
			out, taken := c.beforeHost(buf)
			if taken {
				return
			}
			if out != nil {
				buf = out // the console's frame in the server's place
			}
		}
		// A flow takes the answer to its own lookups, and holds the
		// agent's while it runs.
		if a != nil && from == mcplog.FromServer && a.fromServer(buf) {
			return
		}
		write(buf)
	}
	u := newUpstream(s.opts.Upstream, s.opts.UpstreamHeader, s.opts.MaxFrameBytes, toHost, s.d.say)
	if a != nil {
		a.toHost = write
		a.toServer = func(line []byte) { u.send(jsonrpc.TrimLine(line)) }
		a.start()
	}
	if o := s.opts.Console; o != nil {
		c := newConsoleClient(*o, s.consoleSession(), s.opts.serverName(), s.rec, s.d.say)
		c.toHost = write
		c.toSrv = func(line []byte) { u.send(jsonrpc.TrimLine(line)) }
		if s.tel != nil {
			c.observe = s.tel.Hold
		}
		s.console = c
		c.start()
	}

	lines := make(chan []byte)
	readDone := make(chan error, 1)
	go func() {
		tooLong := hostTooLong(s.d.say, s.opts.MaxFrameBytes)
		if s.opts.activeMode() || s.opts.Console != nil {
			// Active mode answers for what it cannot inspect (issue 23):
			// the host gets an error for the line's id, as over stdio.
			tooLong = func(start []byte) { s.refuseTooLong(writer(write), start) }
		}
		readDone <- readLines(st.In, s.opts.MaxFrameBytes, lines, tooLong)
	}()
loop:
	for {
		select {
		case line := <-lines:
			body := jsonrpc.TrimLine(line)
			if len(body) == 0 {
				continue
			}
			if s.opts.Trace {
				s.d.say("trace host -> server %d B %s", len(line), describe(jsonrpc.Classify(body)))
			}
			s.tel.FromHost(body)
			if s.rec != nil {
				recordContext(s.context, s.rec, body)
				s.rec.Record(mcplog.FromClient, body)
			}
			if c := s.console; c != nil {
				c.waitAttach()
				if c.beforeServer(line) {
					continue // the console answered it, sent something in its place, or dropped it
				}
			}
			if a != nil && a.hostLine(body) {
				continue // the proxy answered it: a refused write, or hoist_commit
			}
			u.send(body)
		case err := <-readDone:
			if err != nil {
				s.d.say("reading from the host: %v", err)
			}
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	if a != nil {
		a.hostDone()
	}
	s.closeConsole() // a frame held now has no host left to wait for
	u.close()
	if a != nil {
		a.serverDone()
		if err := a.close(); err != nil {
			s.d.say("%v", err)
		}
	}
	if s.rec != nil {
		if err := s.rec.Close(); err != nil {
			s.d.say("%v", err)
		}
	}
	return 0
}

// readLines sends each line of r (terminator included, newly allocated) on
// out until r ends. A line longer than max cannot be POSTed whole, nor
// passed to a host over HTTP, so it is dropped: tooLong is called with its
// start (at most tooLongPeek bytes), to say so and answer for it.
func readLines(r io.Reader, max int, out chan<- []byte, tooLong func(start []byte)) error {
	br := bufio.NewReaderSize(r, readBufSize)
	var acc []byte
	dropping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !dropping {
			acc = append(acc, chunk...)
			if len(acc) > max {
				tooLong(acc[:min(len(acc), tooLongPeek)])
				dropping, acc = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(acc) > 0 {
			out <- acc
		}
		acc, dropping = nil, false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// tooLongPeek is how much of a dropped line readLines shows: enough for the
// members before a large result (responseID).
const tooLongPeek = 4 << 10

// writer adapts a function that writes whole lines to io.Writer.
type writer func([]byte)

func (w writer) Write(p []byte) (int, error) {
	w(p)
	return len(p), nil
}

// hostTooLong is readLines' word on a host line past --max-frame-bytes.
func hostTooLong(say func(string, ...any), max int) func([]byte) {
	return func([]byte) {
		say("a line from the host is longer than --max-frame-bytes (%d) and cannot be sent over HTTP; dropped", max)
	}
}

// responseID reads the id of a JSON-RPC response from the start of its
// line, which may be cut anywhere: the id, when the members read before the
// cut name one and say the line is a response (a result or an error
// member, and no method). It is how the proxy answers a request whose
// answer it cannot pass on (manual, "Hosts over HTTP": a message is at most
// 4 MiB, and a request the server cannot be reached for is answered with a
// JSON-RPC error).
func responseID(start []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(start))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	response := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := t.(string)
		switch name {
		case "id":
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return nil, false
			}
			if k := jsontext.Kind(raw); k != '"' && k != '-' && (k < '0' || k > '9') {
				return nil, false // null, or not an id at all
			}
			id = raw
			continue
		case "method":
			return nil, false
		case "result", "error":
			response = true
		}
		if id != nil && response {
			return id, true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break // cut inside this member's value
		}
	}
	if id != nil && response {
		return id, true
	}
	return nil, false
}
