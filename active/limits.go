package active

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Limits (--limit, --max-calls; docs/limits.md): a tools/call over one of
// the session's limits is answered with a tool error that names the limit
// and says when it frees, and never reaches the server. The limits are
// token buckets (golang.org/x/time/rate) read on the Machine's clock, so
// that a sequence of events decides the same way at any speed. A call
// counts when the proxy lets it on to the server: a call the guards or the
// judge refuse, or another limit stops, costs nothing.

// LimitsConfig is --limit and --max-calls.
type LimitsConfig struct {
	// Rules are the --limit flags, in order.
	Rules []Limit
	// MaxCalls, when more than 0, is the session's call budget
	// (--max-calls): the calls that reach the server, of every tool.
	MaxCalls int
}

// AnyTool is the Tool of a limit on every call together ('*=N/PERIOD').
const AnyTool = "*"

// Limit is one --limit TOOL=N/PERIOD: a bucket of N calls that refills at
// N per Per, so N calls may go at once and then one every Per/N. Tool
// AnyTool counts every call together.
type Limit struct {
	Tool string
	N    int
	Per  time.Duration
	// Spec is the flag's value as given, for messages.
	Spec string
}

// ParseLimit reads a --limit value: TOOL=N/PERIOD, where PERIOD is a
// duration (10s, 1m30s) or a bare unit (s, m, h), which stands for one of
// it. TOOL is a tool's name exactly as the server lists it, or * for every
// call together.
func ParseLimit(s string) (Limit, error) {
	tool, rest, ok := strings.Cut(s, "=")
	n, per, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || tool == "" {
		return Limit{}, fmt.Errorf("%q: want TOOL=N/PERIOD, such as lookup=10/1m or '*=100/h'", s)
	}
	l := Limit{Tool: tool, Spec: s}
	var err error
	if l.N, err = strconv.Atoi(n); err != nil || l.N < 1 {
		return Limit{}, fmt.Errorf("%q: N must be a whole number of calls, at least 1", s)
	}
	switch per {
	case "s", "m", "h":
		per = "1" + per
	}
	if l.Per, err = time.ParseDuration(per); err != nil || l.Per <= 0 {
		return Limit{}, fmt.Errorf("%q: PERIOD must be a duration such as s, m, h, 10s or 1m30s", s)
	}
	return l, nil
}

// limitState is the session's limits, owned by the Machine.
type limitState struct {
	cfg     LimitsConfig
	buckets []*rate.Limiter // one per rule
	any     bool            // a rule counts every call, or a budget does
	tools   map[string]bool // the tools a rule names
	calls   int             // the calls that counted against MaxCalls
}

func newLimits(c LimitsConfig) (*limitState, error) {
	s := &limitState{cfg: c, tools: map[string]bool{}, any: c.MaxCalls > 0}
	if c.MaxCalls < 0 {
		return nil, errors.New("--max-calls: must be 0 or more")
	}
	for _, r := range c.Rules {
		if r.N < 1 || r.Per <= 0 {
			return nil, fmt.Errorf("--limit %s: N must be at least 1 and PERIOD more than 0", r.Spec)
		}
		perSecond := float64(r.N) / r.Per.Seconds()
		s.buckets = append(s.buckets, rate.NewLimiter(rate.Limit(perSecond), r.N))
		if r.Tool == AnyTool {
			s.any = true
		} else {
			s.tools[r.Tool] = true
		}
	}
	return s, nil
}

// limits reports whether a call of tool is counted by some limit.
func (s *limitState) limits(tool string) bool { return s != nil && (s.any || s.tools[tool]) }

// limitRefusal is a call a limit stops: the agent's text, the limit that
// stopped it as given ("--limit TOOL=N/PERIOD", "--max-calls N") and when
// it frees (zero for the budget, which does not free in the session).
type limitRefusal struct {
	Text, Limit string
	Frees       time.Time
}

// over returns the refusal of a call of tool at now when a limit stops
// it, nil when every limit lets it through. It takes nothing: take does,
// once the call goes on.
func (s *limitState) over(tool string, now time.Time) *limitRefusal {
	if s == nil {
		return nil
	}
	if s.cfg.MaxCalls > 0 && s.calls >= s.cfg.MaxCalls {
		return &limitRefusal{Limit: "--max-calls " + strconv.Itoa(s.cfg.MaxCalls),
			Text: fmt.Sprintf("Refused by hoist-mcp's call budget (--max-calls %d): this session has made its %d calls, so %s was not sent to the MCP server and nothing changed; the budget does not free in this session, a new session has its own",
				s.cfg.MaxCalls, s.cfg.MaxCalls, tool)}
	}
	for i, r := range s.cfg.Rules {
		if r.Tool != AnyTool && r.Tool != tool {
			continue
		}
		b := s.buckets[i]
		tokens := b.TokensAt(now)
		if tokens >= 1 {
			continue
		}
		wait := time.Duration(math.Ceil((1 - tokens) / float64(b.Limit()) * float64(time.Second)))
		// Rounded up: a call sent at the time said is let through.
		if wait > time.Second {
			wait = (wait + time.Second - 1).Truncate(time.Second)
		} else {
			wait = (wait + time.Millisecond - 1).Truncate(time.Millisecond)
		}
		what := "calls of " + tool
		if r.Tool == AnyTool {
			what = "calls of any tool"
		}
		frees := now.Add(wait)
		return &limitRefusal{Limit: "--limit " + r.Spec, Frees: frees,
			Text: fmt.Sprintf("Refused by hoist-mcp's limit --limit %s (%d %s per %v): %s was not sent to the MCP server and nothing changed; the limit frees a call in %v, at %s",
				r.Spec, r.N, what, short(r.Per), tool, short(wait), freesAt(frees))}
	}
	return nil
}

// freesAt writes when a limit frees, as the agent and the guards log read
// it: RFC 3339, UTC, milliseconds.
func freesAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// logLimit writes a limit's refusal of a call to the guards log, when it
// is kept: id is the call's (nil for a step of hoist_commit, which has
// none), commit the hoist_commit it was made for.
func (m *Machine) logLimit(id, commit json.RawMessage, call mcpmsg.Call, r *limitRefusal) {
	if !m.cfg.GuardsLog {
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	line := mcplog.GuardsLimit{Type: mcplog.TypeLimit, ID: id, Commit: commit, Tool: call.Name, Limit: r.Limit, Refusal: r.Text}
	if !r.Frees.IsZero() {
		line.Frees = freesAt(r.Frees)
	}
	m.logJSON(GuardsLog, line)
}

// take counts a call of tool that goes on to the server at now, and
// returns what gives the call back (a batch answered whole sends none of
// its calls).
func (s *limitState) take(tool string, now time.Time) (undo func()) {
	if s == nil {
		return func() {}
	}
	s.calls++
	var taken []*rate.Reservation
	for i, r := range s.cfg.Rules {
		if r.Tool == AnyTool || r.Tool == tool {
			taken = append(taken, s.buckets[i].ReserveN(now, 1))
		}
	}
	return func() {
		s.calls--
		for _, r := range taken {
			r.CancelAt(now)
		}
	}
}

// short writes a duration without its zero units: 1h, 1m30s, 1.5s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
