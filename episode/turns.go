package episode

import (
	"bytes"
	"sort"
)

// StepKind says what a Step of a timeline is.
type StepKind uint8

// The kinds of step turn inference looks at.
const (
	// StepCall is a tools/call sent, by the agent or by the proxy.
	StepCall StepKind = iota
	// StepAnswer is the moment the caller got the call's answer. In active
	// mode the proxy may hold the server's response and answer the agent
	// later itself (with its lookups appended); the answer is then the
	// proxy's response, since that is when the agent could read it.
	StepAnswer
	// StepSaid is a line of the conversation (a context entry).
	StepSaid
	// StepCancel is a call cancelled (notifications/cancelled), or left
	// unanswered when its log ended (manual, "Several servers").
	StepCancel
)

// Step is one moment of a timeline for InferTurns.
type Step struct {
	Kind StepKind
	// TMS is when it happened, in milliseconds; steps are in time order.
	TMS int64
	// Call is the call's index for StepCall, StepAnswer and StepCancel.
	// Calls are numbered 0, 1, … in the order of their StepCall.
	Call int
	// By is who made the call (StepCall).
	By Actor
	// Values are the argument values the call passes (StepCall): its
	// arguments' strings and numbers, as text (see ArgValues).
	Values []string
	// Text is what the call returned (StepAnswer) or what was said
	// (StepSaid).
	Text string
}

// JoinWindowMS is the manual's half second: a call sent within it of the
// turn's last response, with nothing said in between, joins the turn.
const JoinWindowMS = 500

// InferTurns assigns each call of a timeline to an LLM turn, by the rules of
// the hoist-mcp manual ("What the proxy cannot see") and issue 3, point 1,
// and returns the turn index of each call (indexed by Step.Call). Turns are
// numbered 0, 1, … in the order they start. A call joins the current turn
// when:
//
//  1. a call of the turn still awaits its answer (parallel calls); a call
//     never answered nor cancelled awaits it for ever, so it keeps its turn
//     open and later calls join it;
//  2. or, for the agent's calls only, the call is sent at most JoinWindowMS
//     after the turn's last answer, nothing was said (StepSaid) since that
//     answer, and the call passes no value that first appeared in what the
//     turn returned: one of its Values whose first occurrence in the
//     timeline (in what was said, passed or returned, as a substring) is in
//     an answer to one of the turn's calls;
//
// and the proxy's own calls (By Proxy) join only by rule 1. Any other call
// starts a new turn.
//
// A call index that no StepCall names gets -1. InferTurns is a pure
// function of its input.
func InferTurns(steps []Step) []int {
	// Calls are numbered from 0 in the order of their StepCall, so no valid
	// index reaches the number of StepCalls; others are ignored.
	n := 0
	for i := range steps {
		if steps[i].Kind == StepCall {
			n++
		}
	}
	turnOf := make([]int, n)
	for i := range turnOf {
		turnOf[i] = -1
	}
	done := make([]bool, n) // answered or cancelled: no longer awaited
	var (
		cur      = -1
		nTurns   = 0
		pending  = 0 // calls of the current turn awaiting their answer
		lastResp int64
		hasResp  bool
		said     bool // something said since the current turn's last answer
		seen     text
	)
	valid := func(c int) bool { return c >= 0 && c < n }
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case StepSaid:
			said = true
			seen.add(s.Text, -1)
		case StepAnswer:
			if !valid(s.Call) || turnOf[s.Call] < 0 || done[s.Call] {
				continue
			}
			done[s.Call] = true
			if turnOf[s.Call] == cur {
				pending--
				lastResp, hasResp, said = s.TMS, true, false
			}
			seen.add(s.Text, turnOf[s.Call])
		case StepCancel:
			if !valid(s.Call) || turnOf[s.Call] < 0 || done[s.Call] {
				continue
			}
			done[s.Call] = true
			if turnOf[s.Call] == cur {
				pending--
			}
		case StepCall:
			if !valid(s.Call) || turnOf[s.Call] >= 0 {
				continue
			}
			join := false
			switch {
			case cur < 0:
			case pending > 0:
				join = true // rule 1
			case s.By == Proxy:
				// The proxy's lookups join only while a call awaits.
			case hasResp && s.TMS-lastResp <= JoinWindowMS && !said:
				join = !seen.firstInTurn(s.Values, cur) // rule 2
			}
			if !join {
				cur, nTurns = nTurns, nTurns+1
				pending, hasResp, said = 0, false, false
			}
			turnOf[s.Call] = cur
			pending++
			for _, v := range s.Values {
				seen.add(v, -1)
			}
		}
	}
	return turnOf
}

// text is everything said, passed and returned so far, one item after
// another, with the turn each answer belongs to, so that the first
// occurrence of a value can be found by searching one buffer.
type text struct {
	buf  []byte
	ends []int // end offset of each item in buf
	turn []int // turn of each item's answer, or -1 for other items
	// first memoizes each value's first occurrence: it never changes once
	// found, and a value not found yet is searched for again only in what
	// was added since, so a long session is not searched over and over.
	first map[string]occurrence
}

type occurrence struct {
	item    int // the item of the first occurrence, or -1: none in buf[:scanned]
	scanned int
}

func (t *text) add(s string, turn int) {
	if s == "" {
		return
	}
	t.buf = append(t.buf, s...)
	t.ends = append(t.ends, len(t.buf))
	t.turn = append(t.turn, turn)
	t.buf = append(t.buf, 0) // no value spans two items
}

// firstItem returns the item where v first occurs, or -1.
func (t *text) firstItem(v string) int {
	if t.first == nil {
		t.first = map[string]occurrence{}
	}
	from := 0
	if o, ok := t.first[v]; ok {
		if o.item >= 0 || o.scanned == len(t.buf) {
			return o.item
		}
		from = max(o.scanned-len(v)+1, 0)
	}
	at := bytes.Index(t.buf[from:], []byte(v))
	if at < 0 {
		t.first[v] = occurrence{item: -1, scanned: len(t.buf)}
		return -1
	}
	item := sort.SearchInts(t.ends, from+at+1)
	t.first[v] = occurrence{item: item}
	return item
}

// firstInTurn reports whether one of values first occurs in an answer of
// the given turn.
func (t *text) firstInTurn(values []string, turn int) bool {
	for _, v := range values {
		if v == "" {
			continue
		}
		if item := t.firstItem(v); item >= 0 && item < len(t.turn) && t.turn[item] == turn {
			return true
		}
	}
	return false
}
