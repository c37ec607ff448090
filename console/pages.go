package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/store"
)

// PageSize is how many sessions one page of the list shows, newest first.
const PageSize = 200

var funcs = template.FuncMap{
	"pct": func(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" },
	"f2":  func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"when": func(t time.Time) string {
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"dur":     func(ms int64) string { return (time.Duration(ms) * time.Millisecond).Round(time.Second / 10).String() },
	"join":    strings.Join,
	"q":       url.QueryEscape,
	"binding": flow.BindingString,
	"plural":  plural,
}

// plural returns "1 session", "2 sessions": n and the noun, in the plural
// unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// counted writes a count with its bounds when they differ: what a served
// session's lookups earned (package earned) is an estimate between them.
func counted(b earned.Bounds, whole bool) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	if b.Hi-b.Lo < 1e-9 {
		if whole {
			return strconv.Itoa(earned.Round(b.Est))
		}
		return strconv.FormatFloat(b.Est, 'f', -1, 64)
	}
	return f(b.Est) + " (" + f(b.Lo) + "–" + f(b.Hi) + ")"
}

func urlQuery(s string) string { return url.QueryEscape(s) }

// page is what every page's layout needs.
type page struct {
	Title string
	Nav   string   // the navigation item to mark
	Flows []string // for the navigation
	Live  string   // "list", a session id, or "" for a page that does not change
	Gen   uint64   // the changes published before the page read its data
}

// page starts a page's view; the handler reads its data after, so that a
// change published meanwhile leaves the page's Gen behind the stream's.
func (s *Server) page(title, nav, live string) page {
	return page{Title: title, Nav: nav, Flows: s.flowNames(), Live: live, Gen: s.hub.generation()}
}

// loggedSource is a console Source as audit.Run reads it: each episode
// with its flow logs' decisions, which judge a served session's lookups
// as hoist audit judges them.
type loggedSource struct{ Source }

var _ audit.Logged = loggedSource{}

func (l loggedSource) Logged(ctx context.Context, f episode.Filter, fn func(*episode.Episode, []flow.Decision) error) error {
	var eps []*episode.Episode
	if err := l.Episodes(ctx, f, func(ep *episode.Episode) error {
		eps = append(eps, ep)
		return nil
	}); err != nil {
		return err
	}
	for _, ep := range eps {
		var ds []flow.Decision
		if earned.Served(ep) {
			_, _, fl, err := l.Session(ctx, ep.ID)
			if err != nil {
				return err
			}
			ds = decisionsOf(fl)
		}
		if err := fn(ep, ds); err != nil {
			return err
		}
	}
	return nil
}

// listRow is one row of the list of sessions.
type listRow struct {
	store.Session
	Lookups, Detours int
	// Hits and Saved (turns saved, or "-") are counts, or a served
	// session's estimates with their bounds; SavedEst is the estimate.
	Hits, Saved string
	SavedEst    float64
}

type sessionsView struct {
	page
	Domain, Server, Host, Since, Until, Flow string
	Rows                                     []listRow
	Total, Offset                            int
	Next, Prev                               string // links to the other pages
	Err                                      string
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := sessionsView{page: s.page("Sessions", "sessions", "list"),
		Domain: q.Get("domain"), Server: q.Get("server"), Host: q.Get("host"), Since: q.Get("since"), Until: q.Get("until"), Flow: q.Get("flow")}
	// ?flow= (empty) asks for the proxy's own lookups; no flow parameter
	// at all audits with the console's one flow.
	if !q.Has("flow") && len(s.flows) == 1 {
		v.Flow = s.flows[0].Name
	}
	f, err := s.filter(v.Domain, v.Host, v.Since, v.Until)
	if err != nil {
		v.Err = err.Error()
		s.render(w, "sessions.html", v)
		return
	}
	list, err := s.src.Sessions(r.Context(), f)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	if v.Server != "" {
		list = slices.DeleteFunc(list, func(x store.Session) bool { return !slices.Contains(x.Servers, v.Server) })
	}
	slices.Reverse(list) // newest first: a live session is at the top
	v.Total = len(list)
	if off := q.Get("offset"); off != "" {
		n, err := strconv.Atoi(off)
		if err != nil || n < 0 {
			v.Err = fmt.Sprintf("offset %q: want how many sessions to skip, a whole number from 0; showing the newest", off)
			n = 0
		}
		v.Offset = n
	}
	v.Offset = max(0, min(v.Offset, len(list)))
	shown := list[v.Offset:min(len(list), v.Offset+PageSize)]
	var fl *namedFlow
	if v.Flow != "" {
		if fl = s.flowNamed(v.Flow); fl == nil {
			v.Err = fmt.Sprintf("flow %q: the console was given no such flow (--flow %s); the counts below are the proxy's own lookups", v.Flow, strings.Join(s.flowNames(), ", "))
			if len(s.flows) == 0 {
				v.Err = fmt.Sprintf("flow %q: the console was given no flow (start it with --flow FILE); the counts below are the proxy's own lookups", v.Flow)
			}
			v.Flow = ""
		}
	}
	ids := make([]string, len(shown))
	for i, x := range shown {
		ids[i] = x.ID
	}
	auds, recs, err := s.judge(r.Context(), ids, fl)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	for _, x := range shown {
		row := listRow{Session: x, Hits: "0", Saved: "-"}
		if a := auds[x.ID]; a != nil {
			row.Lookups, row.Detours = a.Total.Lookups, a.Total.Detours
			row.Hits, row.Saved = counted(a.Total.HitBounds, true), counted(a.Total.SavedBounds, false)
			row.SavedEst = a.Total.SavedBounds.Est
		} else if e := recs[x.ID]; e != nil && len(e.Lookups) > 0 {
			row.Lookups = len(e.Lookups)
			row.Detours = row.Lookups - earned.Round(e.Hits.Est)
			row.Hits, row.Saved = counted(e.Hits, true), counted(e.Saved, false)
			row.SavedEst = e.Saved.Est
		}
		v.Rows = append(v.Rows, row)
	}
	link := func(off int) string {
		q2 := url.Values{}
		for k, vs := range q {
			q2[k] = vs
		}
		q2.Set("offset", strconv.Itoa(off))
		return "/?" + q2.Encode()
	}
	if v.Offset+PageSize < len(list) {
		v.Next = link(v.Offset + PageSize)
	}
	if v.Offset > 0 {
		v.Prev = link(max(0, v.Offset-PageSize))
	}
	s.render(w, "sessions.html", v)
}

// filter reads the list's filters by Options.Filter, hoist sessions' own
// reading of its flags; without it, dates are not understood.
func (s *Server) filter(domain, host, since, until string) (episode.Filter, error) {
	if s.opt.Filter != nil {
		f, err := s.opt.Filter(domain, host, since, until)
		if err != nil {
			return f, errors.New(strings.TrimPrefix(err.Error(), "--"))
		}
		return f, nil
	}
	if since != "" || until != "" {
		return episode.Filter{}, errors.New("this console reads no dates")
	}
	return episode.Filter{Domain: domain, HostSession: host}, nil
}

// entry is one line of a session's timeline: a turn's start, a message of
// the conversation, or a call.
type entry struct {
	Turn    *episode.Turn
	Message *episode.Message
	Call    *callView
	TMS     int64
}

type callView struct {
	*episode.Call
	Args    string
	Result  string // the preview of its result, the appended item left out
	Clipped bool
	// Appended is the text item the proxy appended to the result after
	// looking things up (Looked), written by the code the proxy writes it
	// with: the episode keeps the server's answer, not the host's.
	Appended string
	Looked   []mcpmsg.Lookup
	IsError  bool
	State    string
	// Mark is the verdict on one of the proxy's own lookups
	// (earned.Lookup.Verdict): "used", "unproven" or "remade".
	Mark string
}

// ResultPreview is how much of a result the timeline shows.
const ResultPreview = 600

type sessionView struct {
	page
	Ep        *episode.Episode
	Row       *store.Session
	Entries   []entry
	Decisions []decisionView
	Runs      int
	Lookups   int
	Detours   int
	// Hits and Saved are what the proxy's lookups earned: counts, or
	// estimates with their bounds (package earned).
	Hits, Saved string
	Guards      []GuardLine
	// Flow and Audit are the flow the session is audited with (the
	// console's one flow, or ?flow=) and what serving it would have done.
	Flow  string
	Audit *audit.Episode
}

type decisionView struct {
	store.Decision
	Offers []offerView
}

type offerView struct {
	Tool, Args, Binding, From string
	PReach, PHabit, PBind     float64
	Taken, Greedy             bool
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	ep, row, fl, err := s.src.Session(r.Context(), id)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	if ep == nil {
		s.fail(w, http.StatusNotFound, fmt.Errorf("no session %q", id))
		return
	}
	v := sessionView{page: s.page("Session "+id, "sessions", id), Ep: ep, Row: row, Guards: guardLines(ep, s.opt.Source.Logs(id)), Flow: r.URL.Query().Get("flow")}
	if v.Flow == "" && len(s.flows) == 1 {
		v.Flow = s.flows[0].Name
	}
	auds, recs, err := s.judge(r.Context(), []string{id}, s.flowNamed(v.Flow))
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	v.Audit = auds[id]
	marks := map[int]*earned.Lookup{}
	if e := recs[id]; e != nil {
		marks = e.ByCall()
		v.Lookups = len(e.Lookups)
		v.Detours = v.Lookups - earned.Round(e.Hits.Est)
		v.Hits, v.Saved = counted(e.Hits, true), counted(e.Saved, false)
	}
	turn := -1
	var agent *callView // the agent's last call: the proxy's lookups after it are appended to its result
	var sent []*callView
	for _, ev := range ep.Events {
		switch {
		case ev.Message != nil:
			v.Entries = append(v.Entries, entry{Message: ev.Message, TMS: ev.TMS})
		case ev.Call != nil:
			c := ev.Call
			if c.Turn != turn && c.Turn >= 0 && c.Turn < len(ep.Turns) {
				turn = c.Turn
				v.Entries = append(v.Entries, entry{Turn: &ep.Turns[turn], TMS: ev.TMS})
			}
			cv := viewCall(c)
			if lk := marks[c.Index]; lk != nil {
				cv.Mark = lk.Verdict()
			}
			if c.By != episode.Proxy {
				agent = cv
			} else if agent != nil && c.Result != nil {
				// The proxy appends each lookup that was answered, by the
				// server's name of the tool (proxy/active.go).
				tool := strings.TrimPrefix(c.Tool, c.Server+"::")
				if len(agent.Looked) == 0 {
					sent = append(sent, agent)
				}
				agent.Looked = append(agent.Looked, mcpmsg.Lookup{Tool: tool, Args: c.Args, Text: c.Result.Text})
			}
			v.Entries = append(v.Entries, entry{Call: cv, TMS: ev.TMS})
		}
	}
	for _, cv := range sent {
		cv.Appended = mcpmsg.FormatLookups(cv.Looked)
	}
	if fl != nil {
		v.Runs = len(fl.Runs)
		for _, d := range fl.Decisions {
			dv := decisionView{Decision: d}
			for i, o := range d.Offers {
				dv.Offers = append(dv.Offers, offerView{Tool: o.Tool, Args: string(o.Args), Binding: bindingText(o.Binding), From: o.From,
					PReach: o.PReach, PHabit: o.PHabit, PBind: o.PBinding, Taken: i == d.Taken, Greedy: i == d.Greedy})
			}
			v.Decisions = append(v.Decisions, dv)
		}
	}
	s.render(w, "session.html", v)
}

func viewCall(c *episode.Call) *callView {
	cv := &callView{Call: c, Args: indent(c.Args)}
	switch {
	case c.Unreadable:
		cv.State = "answered, but its answer's log line is unreadable"
	case c.Result == nil && c.Cancelled:
		cv.State = "cancelled, never answered"
	case c.Result == nil:
		cv.State = "not answered yet, or never"
	case c.Cancelled:
		cv.State = "cancelled"
	}
	if c.Result != nil {
		text := c.Result.Text
		cv.IsError = c.Result.IsError
		if r := []rune(text); len(r) > ResultPreview {
			text, cv.Clipped = string(r[:ResultPreview]), true
		}
		cv.Result = text
	}
	return cv
}

func bindingText(b map[string]string) string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + b[k]
	}
	return strings.Join(parts, ", ")
}

// indent pretty-prints JSON arguments, or returns them as they are.
func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 {
		return "{}"
	}
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// GuardLine is a guard's verdict or the judge's answer about one call.
type GuardLine struct {
	CallIndex int
	Kind      string // "guard" or "judge"
	Verdict   string
	Why       string
}

// guardLines returns the guard verdicts and judge answers of a session:
// the guards log and the confirm log beside each of its logs
// (<session>.guards.jsonl, <session>.confirm.jsonl), read through mcplog's
// line types, each line placed at the agent's call of its id. Lines that
// cannot be read are left out; a store keeps neither log, so a session
// read from one shows none.
func guardLines(ep *episode.Episode, logs []string) []GuardLine {
	byID := map[string]int{}
	for _, c := range ep.Calls() {
		if c.By == episode.Agent {
			if _, ok := byID[c.ID]; !ok {
				byID[c.ID] = c.Index
			}
		}
	}
	at := func(id json.RawMessage) int {
		if i, ok := byID[strings.Trim(string(id), `"`)]; ok {
			return i
		}
		if i, ok := byID[string(id)]; ok {
			return i
		}
		return -1
	}
	var out []GuardLine
	for _, p := range logs {
		base := strings.TrimSuffix(strings.TrimSuffix(p, ".zst"), ".jsonl")
		eachLine(base+mcplog.GuardsSuffix, func(b []byte) {
			var l mcplog.GuardsCheck
			if json.Unmarshal(b, &l) != nil {
				return
			}
			if l.Type == mcplog.TypeLimit {
				out = appendLimit(out, b, at)
				return
			}
			if l.Type != mcplog.TypeCheck {
				return
			}
			before := len(out)
			for _, v := range l.Verdicts {
				if v.Verdict == "allow" {
					continue
				}
				verdict := v.Verdict + " (logged)"
				if v.Enforced {
					verdict = v.Verdict + " (enforced)"
				}
				why := v.Reason
				if why == "" {
					why = "lacks " + v.Lacks
				}
				out = append(out, GuardLine{CallIndex: at(l.ID), Kind: "guard " + v.Rule, Verdict: verdict, Why: why})
			}
			if len(out) == before {
				out = append(out, GuardLine{CallIndex: at(l.ID), Kind: "guards", Verdict: "allow", Why: "every rule allowed " + l.Tool})
			}
		})
		eachLine(base+mcplog.ConfirmSuffix, func(b []byte) {
			var l mcplog.ConfirmJudgment
			if json.Unmarshal(b, &l) != nil || l.Type != mcplog.TypeJudgment {
				return
			}
			verdict := "went on"
			switch {
			case l.Enforced:
				verdict = "refused"
			case l.Failed:
				verdict = "would refuse (logged)"
			}
			var answers []string
			for _, a := range l.Answers {
				if a.PYes != nil {
					answers = append(answers, fmt.Sprintf("%s: p_yes %.2f", a.Question, *a.PYes))
				} else {
					answers = append(answers, a.Question+": no answer ("+a.Why+")")
				}
			}
			out = append(out, GuardLine{CallIndex: at(l.ID), Kind: "judge", Verdict: verdict, Why: strings.Join(answers, "; ")})
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CallIndex < out[j].CallIndex })
	return out
}

// appendLimit adds a limit's refusal (a guards log line of type limit) at
// the agent's call it refused: for a step of hoist_commit, which has no id
// of its own, at the hoist_commit.
func appendLimit(out []GuardLine, b []byte, at func(json.RawMessage) int) []GuardLine {
	var l mcplog.GuardsLimit
	if json.Unmarshal(b, &l) != nil {
		return out
	}
	i := at(l.ID)
	if string(l.ID) == "null" || len(l.ID) == 0 {
		i = at(l.Commit)
	}
	why := l.Limit + ": " + l.Tool + " was not sent"
	if l.Frees != "" {
		why += "; it frees at " + l.Frees
	}
	return append(out, GuardLine{CallIndex: i, Kind: "limit", Verdict: "refused", Why: why})
}

// eachLine calls fn with each line of the file at path; a missing file
// has none.
func eachLine(path string, fn func([]byte)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
}

type flowView struct {
	page
	Name   string
	Path   string
	Review *flow.Review
	Graph  template.HTML
}

// namedIn returns the flow the request names, or answers 404.
func (s *Server) namedIn(w http.ResponseWriter, r *http.Request) *namedFlow {
	name := r.URL.Query().Get("name")
	nf := s.flowNamed(name)
	if nf == nil {
		s.fail(w, http.StatusNotFound, fmt.Errorf("no flow %q: give the console one with --flow FILE", name))
	}
	return nf
}

func (s *Server) flowPage(w http.ResponseWriter, r *http.Request) {
	nf := s.namedIn(w, r)
	if nf == nil {
		return
	}
	rev := nf.F.Review(flow.ServedRule(nf.F, s.opt.Rule), -1) // as hoist-mcp serves it: learn and flow-show count the same (flow.CountSites)
	v := flowView{page: s.page("Flow "+nf.Name, "flow:"+nf.Name, ""), Name: nf.Name, Path: nf.Path, Review: rev, Graph: flowGraph(rev)}
	s.render(w, "flow.html", v)
}

type savingsView struct {
	page
	Name   string
	Report *audit.Report
	Chart  template.HTML
	// Days charts the sessions, hits and turns saved per day.
	Days template.HTML
	// Hits and Saved are the report's totals, each with its bounds when
	// served sessions make it an estimate (package earned).
	Hits, Saved string
}

// tally is the sessions of a day or of a host, with their hits and LLM
// turns saved: the sum of the figures the list of sessions shows (a
// served session's estimates).
type tally struct {
	Key         string
	Sessions    int
	Hits, Saved float64
}

// tallies sums every session's figures with flow fl (nil: the proxy's
// own lookups) by key, in the keys' order.
func (s *Server) tallies(ctx context.Context, fl *namedFlow, key func(store.Session) string) ([]tally, error) {
	list, err := s.src.Sessions(ctx, episode.Filter{})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, x := range list {
		ids[i] = x.ID
	}
	auds, recs, err := s.judge(ctx, ids, fl)
	if err != nil {
		return nil, err
	}
	by := map[string]*tally{}
	for _, x := range list {
		k := key(x)
		t := by[k]
		if t == nil {
			t = &tally{Key: k}
			by[k] = t
		}
		t.Sessions++
		if a := auds[x.ID]; a != nil {
			t.Hits += a.Total.HitBounds.Est
			t.Saved += a.Total.SavedBounds.Est
		} else if e := recs[x.ID]; e != nil {
			t.Hits += e.Hits.Est
			t.Saved += e.Saved.Est
		}
	}
	out := make([]tally, 0, len(by))
	for _, t := range by {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (s *Server) savingsPage(w http.ResponseWriter, r *http.Request) {
	nf := s.namedIn(w, r)
	if nf == nil {
		return
	}
	rep, err := audit.Run(r.Context(), loggedSource{s.src}, nf.F, audit.Options{Rule: s.opt.Rule, Caps: s.opt.Caps})
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	days, err := s.tallies(r.Context(), nf, func(x store.Session) string { return x.Started.UTC().Format(time.DateOnly) })
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	v := savingsView{page: s.page("Savings of "+nf.Name, "savings:"+nf.Name, "list"), Name: nf.Name, Report: rep, Chart: savingsChart(rep), Days: daysChart(days),
		Hits: counted(rep.Total.HitBounds, true), Saved: counted(rep.Total.SavedBounds, false)}
	if b := rep.Total.SavedBounds; b.Hi-b.Lo < 1e-9 {
		v.Saved = strconv.FormatFloat(b.Est, 'f', 1, 64) // as the audit's text writes it
	}
	s.render(w, "savings.html", v)
}

type hostsView struct {
	page
	Command, Listen, Domain, Record string
	Out, Err                        string
	// Tallies are the sessions per host (the logs' host_session), with
	// the hits and turns saved of the console's flow when it has one.
	Tallies []tally
	Chart   template.HTML // the tallies as bars
	Flow    string
}

func (s *Server) hostsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := hostsView{page: s.page("Hosts", "hosts", ""), Command: q.Get("command"), Listen: q.Get("listen"), Domain: q.Get("domain"), Record: q.Get("record")}
	if v.Record == "" {
		v.Record = "~/.hoist/logs"
	}
	if cmd := strings.Fields(v.Command); len(cmd) > 0 && s.opt.Hosts != nil {
		var b strings.Builder
		if err := s.opt.Hosts(&b, HostsRequest{Command: cmd, Listen: v.Listen, Domain: v.Domain, Record: v.Record}); err != nil {
			v.Err = err.Error()
		}
		v.Out = b.String()
	}
	var fl *namedFlow
	if len(s.flows) == 1 {
		fl = s.flows[0]
		v.Flow = fl.Name
	}
	ts, err := s.tallies(r.Context(), fl, func(x store.Session) string { return x.HostSession })
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	v.Tallies = ts
	v.Chart = hostsChart(ts)
	s.render(w, "hosts.html", v)
}
