package store

// An episode's document: its servers, messages, calls (with their
// results) and turns as one JSON value on its row, which
// migrations/0004_episode_docs.sql lays out and whose views read it. Reading
// an episode is then one value to decode, here in Go, where reading its
// rows cost a C call per column through the driver (issue 13, point 2).
//
// The document is written and read only by this file, through jsontext:
// strings are encoded by jsontext.AppendString and decoded by
// jsontext.Unquote, the raw JSON the episode keeps (a server's info, a
// call's arguments, a response) is embedded as it is and cut out by
// jsontext's scanner, byte for byte.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/jsontext"
)

// The columns of each array in the document (see the migration); the
// arrays hold at least these, a later version may add more after them.
const (
	serverCols  = 5
	messageCols = 4
	callCols    = 16
	turnCols    = 3
	toolCols    = 5
)

// appendRaw appends raw JSON as it is, null when there is none, and a JSON
// string of it when it is not JSON, so that the document stays JSON.
func appendRaw(dst []byte, raw []byte) []byte {
	switch {
	case len(raw) == 0:
		return append(dst, "null"...)
	case jsontext.Valid(raw):
		return append(dst, raw...)
	}
	return jsontext.AppendString(dst, string(raw), jsontext.Plain)
}

// docWriter appends the arrays of a document, a comma before every value
// but the first of its array.
type docWriter struct {
	b    []byte
	more bool // the array open holds a value already
}

func (w *docWriter) sep() {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
}

// open begins an array, as the next value of the one open.
func (w *docWriter) open() {
	w.sep()
	w.b = append(w.b, '[')
	w.more = false
}

func (w *docWriter) close() {
	w.b = append(w.b, ']')
	w.more = true
}

// member begins the document's member name, an array, after the others.
func (w *docWriter) member(name string) {
	if len(w.b) == 0 || w.b[len(w.b)-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = jsontext.AppendString(w.b, name, jsontext.Plain)
	w.b = append(w.b, ':')
	w.more = false
	w.open()
}

func (w *docWriter) str(s string) {
	w.sep()
	w.b = jsontext.AppendString(w.b, s, jsontext.Plain)
}

func (w *docWriter) int(n int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, n, 10)
}

func (w *docWriter) bool(v bool) {
	w.sep()
	w.b = strconv.AppendBool(w.b, v)
}

func (w *docWriter) raw(r []byte) {
	w.sep()
	w.b = appendRaw(w.b, r)
}

func (w *docWriter) null() {
	w.sep()
	w.b = append(w.b, "null"...)
}

// appendDoc appends the document of ep: everything of it but the tools
// (appendTools) and the episode's own columns.
func appendDoc(dst []byte, ep *episode.Episode) []byte {
	w := docWriter{b: append(dst, '{')}
	w.member("servers")
	for _, sv := range ep.Servers {
		w.open()
		w.str(sv.Name)
		w.str(sv.Session)
		w.str(sv.Path)
		w.open()
		for _, a := range sv.Command {
			w.str(a)
		}
		w.close()
		w.raw(sv.Info)
		w.close()
	}
	w.close()
	w.member("messages")
	for i := range ep.Events {
		ev := &ep.Events[i]
		if ev.Type != episode.EventMessage || ev.Message == nil {
			continue
		}
		w.open()
		w.int(int64(i))
		w.int(ev.TMS)
		w.str(ev.Message.Role)
		w.str(ev.Message.Text)
		w.close()
	}
	w.close()
	// A result is written with its call, at its own place in the order: the
	// first result event of each call.
	type at struct{ seq, tms int64 }
	var results map[int]at
	for i := range ep.Events {
		if ev := &ep.Events[i]; ev.Type == episode.EventResult && ev.Result != nil {
			if results == nil {
				results = map[int]at{}
			}
			if _, ok := results[ev.Result.CallIndex]; !ok {
				results[ev.Result.CallIndex] = at{int64(i), ev.TMS}
			}
		}
	}
	w.member("calls")
	for i := range ep.Events {
		ev := &ep.Events[i]
		if ev.Type != episode.EventCall || ev.Call == nil {
			continue
		}
		c := ev.Call
		kind := episode.Generic
		if t := ep.Tool(c.Tool); t != nil {
			kind = kindOr(t.Kind)
		}
		w.open()
		w.int(int64(i))
		w.int(ev.TMS)
		w.str(c.ID)
		w.str(c.Server)
		w.str(c.Tool)
		w.str(string(kind))
		w.raw(c.Args)
		w.str(string(c.By))
		w.int(int64(c.Turn))
		w.bool(c.Cancelled)
		w.bool(c.Unreadable)
		if r := c.Result; r != nil {
			if a, ok := results[c.Index]; ok {
				w.int(a.seq)
				w.int(a.tms)
			} else {
				w.null()
				w.null()
			}
			w.str(r.Text)
			w.bool(r.IsError)
			w.raw(r.Raw)
		} else {
			w.null()
			w.null()
			w.null()
			w.bool(false)
			w.null()
		}
		w.close()
	}
	w.close()
	w.member("turns")
	for _, t := range ep.Turns {
		w.open()
		w.int(t.StartMS)
		w.int(t.EndMS)
		w.int(int64(len(t.Calls)))
		w.close()
	}
	w.close()
	return append(w.b, '}')
}

// appendTools appends the document of a tool list, which tool_lists keeps
// once however many episodes listed it.
func appendTools(dst []byte, tools []episode.Tool) []byte {
	w := docWriter{b: dst}
	w.open()
	for _, t := range tools {
		w.open()
		w.str(t.Name)
		w.str(t.Server)
		w.str(string(kindOr(t.Kind)))
		w.raw(t.InputSchema)
		w.raw(t.Annotations)
		w.close()
	}
	w.close()
	return w.b
}

// appendWire appends the wire lines an episode does not model, in the
// order given.
func appendWire(dst []byte, lines []WireLine) []byte {
	w := docWriter{b: dst}
	w.open()
	for _, l := range lines {
		w.open()
		w.int(int64(l.Server))
		w.int(int64(l.Line))
		w.int(l.TMS)
		w.str(l.From)
		if l.Message != nil {
			w.raw(l.Message)
			w.null()
		} else {
			w.null()
			w.str(l.Raw)
		}
		w.close()
	}
	w.close()
	return w.b
}

// errDoc is wrapped by every error reading a document that is not what
// this file writes: a damaged store, or one edited by hand.
var errDoc = errors.New("malformed episode document")

// row is one array of a document, cut into its values, which alias the
// document.
type row [callCols][]byte

// rows reads the array of arrays at c, calling fn with each inner array cut
// into its values; an array needs at least want. A later version's extra
// values are left out.
func rows(c *jsontext.Cursor, want int, what string, fn func(i int, r *row) error) error {
	if !c.Enter('[') {
		return fmt.Errorf("%w: %s is not an array", errDoc, what)
	}
	var r row
	for i := 0; c.More(']'); i++ {
		if !c.Enter('[') {
			return fmt.Errorf("%w: %s %d is not an array", errDoc, what, i)
		}
		n := 0
		for ; c.More(']'); n++ {
			v := c.Value()
			if n < len(r) {
				r[n] = v
			}
		}
		if n < want {
			return fmt.Errorf("%w: %s %d has %d values, want %d", errDoc, what, i, n, want)
		}
		if err := fn(i, &r); err != nil {
			return fmt.Errorf("%s %d: %w", what, i, err)
		}
	}
	return nil
}

// docText returns the text of a JSON string value of the document, which
// is s's own bytes when it has no escapes (the document is read as one
// string, so its texts share it).
func docText(s string, doc, v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", fmt.Errorf("%w: %.20q is not a string", errDoc, v)
	}
	if bytes.IndexByte(v, '\\') < 0 {
		off := jsontext.Offset(doc, v)
		return s[off+1 : off+len(v)-1], nil
	}
	return jsontext.Unquote(v), nil
}

// docTexts reads the JSON strings vals into dsts, one each.
func docTexts(s string, doc []byte, vals [][]byte, dsts ...*string) error {
	for i, v := range vals {
		t, err := docText(s, doc, v)
		if err != nil {
			return err
		}
		*dsts[i] = t
	}
	return nil
}

func docInt(v []byte) (int64, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %.20q is not an integer", errDoc, v)
	}
	return n, nil
}

// docInts returns two integers of the document: a time and its place, a
// turn's start and end.
func docInts(a, b []byte) (int64, int64, error) {
	x, err := docInt(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := docInt(b)
	return x, y, err
}

func docNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

func docBool(v []byte) bool { return len(v) == 4 && string(v) == "true" }

// docRaw returns raw JSON of the document, copied; nil for null.
func docRaw(v []byte) json.RawMessage {
	if docNull(v) {
		return nil
	}
	return json.RawMessage(slices.Clone(v))
}

// decodeDoc fills ep's servers, events and turns from its document s.
func decodeDoc(s string, ep *episode.Episode) (err error) {
	// The store wrote the document, so it is JSON; one edited by hand may
	// not be, and the cursor does not check.
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: not JSON", errDoc)
		}
	}()
	doc := jsontext.StringBytes(s)
	c := jsontext.NewCursor(doc)
	if !c.Enter('{') {
		return fmt.Errorf("%w: not an object", errDoc)
	}
	type seqEvent struct {
		seq int64
		ev  episode.Event
	}
	var evs []seqEvent
	var callTurns []int
	for c.More('}') {
		name := jsontext.Unquote(c.Name())
		var err error
		switch name {
		case "servers":
			err = rows(&c, serverCols, "server", func(_ int, r *row) error {
				var sv episode.Server
				if err := docTexts(s, doc, r[:3], &sv.Name, &sv.Session, &sv.Path); err != nil {
					return err
				}
				if r[3][0] != '[' {
					return fmt.Errorf("%w: a command is not an array", errDoc)
				}
				for a := range jsontext.Elements(r[3]) {
					arg, err := docText(s, doc, a)
					if err != nil {
						return err
					}
					sv.Command = append(sv.Command, arg)
				}
				sv.Info = docRaw(r[4])
				ep.Servers = append(ep.Servers, sv)
				return nil
			})
		case "messages":
			err = rows(&c, messageCols, "message", func(_ int, r *row) error {
				seq, tms, err := docInts(r[0], r[1])
				if err != nil {
					return err
				}
				m := &episode.Message{}
				if err := docTexts(s, doc, r[2:4], &m.Role, &m.Text); err != nil {
					return err
				}
				evs = append(evs, seqEvent{seq, episode.Event{Type: episode.EventMessage, TMS: tms, Message: m}})
				return nil
			})
		case "calls":
			err = rows(&c, callCols, "call", func(i int, r *row) error {
				seq, tms, err := docInts(r[0], r[1])
				if err != nil {
					return err
				}
				c := &episode.Call{Index: i, Args: docRaw(r[6]), Cancelled: docBool(r[9]), Unreadable: docBool(r[10])}
				var by string
				if err := docTexts(s, doc, [][]byte{r[2], r[3], r[4], r[7]}, &c.ID, &c.Server, &c.Tool, &by); err != nil {
					return err
				}
				c.By = episode.Actor(by)
				turn, err := docInt(r[8])
				if err != nil {
					return err
				}
				c.Turn = int(turn)
				callTurns = append(callTurns, c.Turn)
				evs = append(evs, seqEvent{seq, episode.Event{Type: episode.EventCall, TMS: tms, Call: c}})
				if docNull(r[13]) {
					return nil
				}
				res := &episode.Result{CallIndex: i, IsError: docBool(r[14]), Raw: docRaw(r[15])}
				if res.Text, err = docText(s, doc, r[13]); err != nil {
					return err
				}
				c.Result = res
				if docNull(r[11]) {
					return nil
				}
				rseq, rtms, err := docInts(r[11], r[12])
				if err != nil {
					return err
				}
				evs = append(evs, seqEvent{rseq, episode.Event{Type: episode.EventResult, TMS: rtms, Result: res}})
				return nil
			})
		case "turns":
			err = rows(&c, turnCols, "turn", func(i int, r *row) error {
				start, end, err := docInts(r[0], r[1])
				if err != nil {
					return err
				}
				ep.Turns = append(ep.Turns, episode.Turn{Index: i, StartMS: start, EndMS: end})
				return nil
			})
		default:
			c.Value() // a later version's
		}
		if err != nil {
			return err
		}
	}
	// Messages, calls and results share one order, by their seq; each array
	// is in order already, so this sort has little to do.
	slices.SortStableFunc(evs, func(a, b seqEvent) int { return cmp.Compare(a.seq, b.seq) })
	ep.Events = make([]episode.Event, len(evs))
	for i := range evs {
		ep.Events[i] = evs[i].ev
	}
	for ci, t := range callTurns {
		if t >= 0 && t < len(ep.Turns) {
			ep.Turns[t].Calls = append(ep.Turns[t].Calls, ci)
		}
	}
	return nil
}

// decodeTools returns the tools of a tool list's document.
func decodeTools(s string) (out []episode.Tool, err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: not JSON", errDoc)
		}
	}()
	doc := jsontext.StringBytes(s)
	c := jsontext.NewCursor(doc)
	err = rows(&c, toolCols, "tool", func(_ int, r *row) error {
		var t episode.Tool
		var kind string
		if err := docTexts(s, doc, r[:3], &t.Name, &t.Server, &kind); err != nil {
			return err
		}
		t.Kind = episode.Kind(kind)
		t.InputSchema, t.Annotations = docRaw(r[3]), docRaw(r[4])
		out = append(out, t)
		return nil
	})
	return out, err
}
