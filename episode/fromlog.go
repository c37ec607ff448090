package episode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Options tune how session logs become an episode.
type Options struct {
	// Qualify names tools "server::tool" even for a single log: once a
	// directory holds a host session of several servers, every log's tools
	// in it are qualified (manual, "Several servers"). FromLogs always
	// qualifies when given more than one log.
	Qualify bool
	// NoMeta skips the <session>.meta.json sidecar beside a log (task id,
	// trial, reward, agent model), which FromLog and FromLogs read by
	// default when the log has a Path.
	NoMeta bool
}

// ErrSameServerName is wrapped by the error FromLogs returns for two logs
// of one host session whose servers have the same name: their tools cannot
// be told apart (manual, "Several servers"), so the caller should keep those
// logs apart, and say so: an Episode each, from FromLog with
// Options.Qualify.
var ErrSameServerName = errors.New("two servers of one host session have the same name")

// FromLog builds the Episode of one session log (issue 3, point 1; manual,
// "Reading logs"). See FromLogs for what it holds.
func FromLog(log *mcplog.Log, opt Options) (*Episode, error) {
	return FromLogs([]*mcplog.Log{log}, opt)
}

// ReadLog reads the session log at path (plain or .zst) and builds its
// Episode with FromLog.
func ReadLog(path string, opt Options) (*Episode, error) {
	log, err := mcplog.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return FromLog(log, opt)
}

// FromLogs builds ONE Episode from the logs of one host session, one log
// per server, that ran at the same time (manual, "Several servers"); with
// one log it is FromLog. The caller decides which logs belong together
// (same header host_session, overlapping in time).
//
//   - Lines are merged in the order the proxies read them: by
//     started_unix_ms + t_ms, stable (ties keep the order of logs, sorted by
//     start, then the order of lines). Event times count from the earliest
//     log's start, which is Episode.Started; Episode.ID is that log's
//     session.
//   - Each server is named by its header's server_name, else its domain,
//     else the name it gave itself in initialize (serverInfo.name). With
//     several logs, or Options.Qualify, tools and calls are named
//     "server::tool". Two logs with the same server name give an error
//     wrapping ErrSameServerName.
//   - Each tools/call the client sends is a call by the agent; each the
//     proxy sends on its own (ids hoist-…) a call by the proxy. The first
//     response to a call is its result: an error for a JSON-RPC error or
//     isError: true; its text the content's text items joined by newlines
//     (the error's message for a JSON-RPC error).
//   - In the stateless era (2026-07-28), a server that needs input answers
//     a call input_required, and the host sends the call again under a new
//     id with inputResponses: the two requests are one call (the same tool
//     and arguments), whose result is the retry's answer. A call the host
//     never sends again is cancelled at its log's end.
//   - notifications/cancelled marks a call cancelled; so does the end of
//     its log without an answer, there, so that it does not hold the other
//     servers' turns open.
//   - Context lines are messages of the conversation. Each proxy of a host
//     session logs the same --context file, so a line another log already
//     gave (the same role and text, at or after the last line this log
//     matched) is kept once.
//   - LLM turns are inferred across servers by InferTurns.
//   - Tools come from tools/list results (the proxy's version, when it
//     answered the host itself): kind from readOnlyHint (true Read, false
//     Write, absent Generic), input contract from inputSchema.
//   - Domain, agent model and host session come from the headers; the
//     client's name from initialize's clientInfo.name, or the clientInfo a
//     stateless-era request carries in its _meta. A
//     <session>.meta.json beside a log sets task id, trial, reward and agent
//     model, unless Options.NoMeta.
func FromLogs(logs []*mcplog.Log, opt Options) (*Episode, error) {
	if len(logs) == 0 {
		return nil, errors.New("building episode: no logs")
	}
	logs = append([]*mcplog.Log(nil), logs...)
	sort.SliceStable(logs, func(i, j int) bool { return logs[i].Header.StartedUnixMS < logs[j].Header.StartedUnixMS })
	b := newBuilder(logs, opt.Qualify || len(logs) > 1)
	if err := b.nameServers(); err != nil {
		return nil, err
	}
	b.run()
	ep := b.ep
	if !opt.NoMeta {
		for _, l := range logs {
			if l.Path == "" {
				continue
			}
			m, err := ReadMeta(MetaPath(l.Path))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			m.Apply(ep)
			break
		}
	}
	return ep, nil
}

// Meta is what a <session>.meta.json sidecar says of a session: what the
// proxy cannot see (the τ²-bench logs carry one; see their README).
type Meta struct {
	TaskID string   // task_id (a string, or a number's digits)
	Trial  *int     // trial, nil when not given
	Reward *float64 // reward, nil when not given
	Model  string   // model: the agent model, which the proxy cannot see
	Domain string   // domain, used only when the log's header has none
}

// MetaPath returns the sidecar path beside a log: <session>.meta.json for
// <session>.jsonl or <session>.jsonl.zst.
func MetaPath(logPath string) string {
	p := strings.TrimSuffix(logPath, ".zst")
	p = strings.TrimSuffix(p, ".jsonl")
	return p + ".meta.json"
}

// ReadMeta reads a .meta.json sidecar. A missing file gives an error
// wrapping os.ErrNotExist.
func ReadMeta(path string) (*Meta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading session metadata: %w", err)
	}
	return ParseMeta(data, path)
}

// ParseMeta reads the bytes of the .meta.json sidecar at path (named in
// errors), for a caller that reads files itself (Options.NoMeta, then
// Meta.Apply).
func ParseMeta(data []byte, path string) (*Meta, error) {
	var raw struct {
		TaskID json.RawMessage `json:"task_id"`
		Trial  *int            `json:"trial"`
		Reward *float64        `json:"reward"`
		Model  string          `json:"model"`
		Domain string          `json:"domain"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &mcplog.InputError{File: path, Err: jsonProblem(data, err)}
	}
	return &Meta{TaskID: idText(raw.TaskID), Trial: raw.Trial, Reward: raw.Reward, Model: raw.Model, Domain: raw.Domain}, nil
}

// Apply sets on ep what the sidecar says, as FromLogs does.
func (m *Meta) Apply(ep *Episode) {
	if m.TaskID != "" {
		ep.TaskID = m.TaskID
	}
	if m.Trial != nil {
		ep.Trial = *m.Trial
	}
	if m.Reward != nil {
		r := *m.Reward
		ep.Reward = &r
	}
	if m.Model != "" {
		ep.AgentModel = m.Model
	}
	if ep.Domain == "" {
		ep.Domain = m.Domain
	}
}

// idText returns a JSON string's text, or a number's digits, or "".
func idText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// jsonProblem words a JSON decoding error with the line it happened on.
func jsonProblem(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: %v", line, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, mcplog.TypeWord(te.Type), te.Value)
	}
	return err
}

// KindOf returns a tool's kind from its listed annotations: readOnlyHint
// true is Read, false is Write, absent (or not a boolean) is Generic
// (manual, "Reading logs").
func KindOf(annotations json.RawMessage) Kind {
	readOnly, ok := mcpmsg.ReadOnlyHint(annotations)
	switch {
	case !ok:
		return Generic
	case readOnly:
		return Read
	}
	return Write
}

// QualifiedName returns "server::tool", the name of a tool in an episode of
// several servers.
func QualifiedName(server, tool string) string { return server + "::" + tool }

// ArgValues returns the values a call's arguments pass, for turn inference:
// every non-empty string and every number (as written) in them, depth
// first, object members in key order. Keys, booleans and nulls are not
// values.
func ArgValues(args json.RawMessage) []string {
	v, ok := jsontext.Parse(args)
	if !ok {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if x != "" {
				out = append(out, x)
			}
		case json.Number:
			out = append(out, x.String())
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// ----------------------------------------------------------------------
// The builder.

type idKey struct {
	log int
	id  string
}

// retryKey names a call that waits for the host to send it again with the
// input the server asked for.
type retryKey struct {
	log  int
	call string // mcpmsg.CallKey
}

type line struct {
	log int
	abs int64 // unix ms
	e   *mcplog.Entry
}

// unreadLine is a damaged log line that may hold an answer.
type unreadLine struct {
	log, step int
	used      bool
}

type builder struct {
	logs    []*mcplog.Log
	qualify bool
	ep      *Episode
	names   []string // server name per log

	steps      []Step
	calls      []*Call
	callLog    []int
	callStep   []int    // index in steps of each call's StepCall
	callTool   []string // each call's tool by the server's name, for its retry key
	answerStep []int    // index in steps of each call's StepAnswer, or -1
	// unread are the damaged lines that may have been answers whose call
	// could not be told from them: a placeholder step each, which becomes
	// the answer of a call its log leaves unanswered (endLog).
	unread []unreadLine

	open     map[idKey][]int // calls awaiting their first response, oldest first (a client may reuse an id)
	answered map[idKey]int   // agent calls answered by the server, which the proxy may answer again
	lists    map[idKey]bool
	// waiting are the agent's calls answered input_required, oldest first,
	// by log and call (tool and arguments): the host's retry of one is that
	// call.
	waiting map[retryKey][]int

	conv   []Message // the conversation so far, for dedupe
	cursor []int     // per log: index in conv after its last matched line

	toolIndex map[string]int // qualified name → index in ep.Tools
}

func newBuilder(logs []*mcplog.Log, qualify bool) *builder {
	first := logs[0].Header
	ep := &Episode{
		ID:          first.Session,
		Source:      SourceMCP,
		HostSession: first.HostSession,
		Started:     time.UnixMilli(first.StartedUnixMS).UTC(),
	}
	for _, l := range logs {
		if ep.Domain == "" && l.Header.Domain != nil {
			ep.Domain = *l.Header.Domain
		}
		if ep.AgentModel == "" && l.Header.AgentModel != nil {
			ep.AgentModel = *l.Header.AgentModel
		}
		ep.Servers = append(ep.Servers, Server{Session: l.Header.Session, Path: l.Path, Command: l.Header.ServerCommand})
	}
	return &builder{
		logs:      logs,
		qualify:   qualify,
		ep:        ep,
		open:      map[idKey][]int{},
		answered:  map[idKey]int{},
		lists:     map[idKey]bool{},
		waiting:   map[retryKey][]int{},
		cursor:    make([]int, len(logs)),
		toolIndex: map[string]int{},
	}
}

// nameServers names each log's server: server_name, else domain, else
// initialize's serverInfo.name (which needs a look at the log), and fills
// in Server.Info.
func (b *builder) nameServers() error {
	b.names = make([]string, len(b.logs))
	byName := map[string]int{}
	for i, l := range b.logs {
		info := serverInfo(l)
		b.ep.Servers[i].Info = info.ServerInfo
		name := l.Header.ServerName
		if name == "" && l.Header.Domain != nil {
			name = *l.Header.Domain
		}
		if name == "" {
			name = info.ServerName
		}
		if name == "" {
			name = l.Header.Session
		}
		if j, dup := byName[name]; dup && len(b.logs) > 1 {
			return fmt.Errorf("merging %s and %s: %w (%q); name them with --server-name",
				b.logs[j].Header.Session, l.Header.Session, ErrSameServerName, name)
		}
		byName[name] = i
		b.names[i] = name
		b.ep.Servers[i].Name = name
	}
	return nil
}

// serverInfo returns what the log's initialize result says of the server,
// or its server/discover result in the stateless era, else the serverInfo
// the first result that carries one has in its _meta (a stateless-era host
// need not ask). The server introduces itself first, so only the log's
// first lines are looked at.
func serverInfo(l *mcplog.Log) mcpmsg.Initialized {
	inits := map[string]bool{}
	var fallback mcpmsg.Initialized
	for i := range min(len(l.Entries), 100) {
		e := &l.Entries[i]
		if e.Message == nil {
			continue
		}
		for m := range jsonrpc.Messages(e.Message) {
			switch {
			case e.From == mcplog.FromClient && m.Kind == jsonrpc.Request && (m.Method == mcpmsg.MethodInitialize || m.Method == mcpmsg.MethodDiscover):
				inits[string(m.ID)] = true
			case e.From == mcplog.FromServer && m.Kind == jsonrpc.Response && m.Result != nil:
				if inits[string(m.ID)] {
					if in := mcpmsg.ReadInitialized(m.Result); in.ServerInfo != nil {
						return in
					}
				}
				if fallback.ServerInfo == nil {
					fallback.ServerInfo, fallback.ServerName = mcpmsg.ResultServerInfo(m.Result)
				}
			}
		}
	}
	return fallback
}

func (b *builder) run() {
	var lines []line
	for li, l := range b.logs {
		var last int64
		for i := range l.Entries {
			e := &l.Entries[i]
			t := e.TMS
			if e.Bad != nil && !e.Bad.HasTMS {
				t = last // a damaged line without its time: when the line before it was read
			}
			last = t
			lines = append(lines, line{log: li, abs: l.Header.StartedUnixMS + t, e: e})
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].abs < lines[j].abs })
	last := make([]int, len(b.logs)) // index in lines of each log's last line
	for i := range last {
		last[i] = -1
	}
	for i, ln := range lines {
		last[ln.log] = i
	}
	start := b.logs[0].Header.StartedUnixMS
	for i, ln := range lines {
		t := ln.abs - start
		b.entry(ln.log, t, ln.e)
		if i == last[ln.log] {
			b.endLog(ln.log, t)
		}
	}
	for li := range b.logs {
		if last[li] < 0 {
			b.endLog(li, 0)
		}
	}
	b.turns()
}

func (b *builder) entry(li int, t int64, e *mcplog.Entry) {
	if e.Bad != nil {
		b.damaged(li, t, e)
		return
	}
	if e.Message == nil {
		return // a raw line: not JSON-RPC, nothing of the episode
	}
	if e.From == mcplog.FromContext {
		b.context(li, t, e.Message)
		return
	}
	for m := range e.Messages() {
		b.message(li, t, e.From, m)
	}
}

// damaged takes a log line that could not be read: when it may hold an
// answer, the call it answers gets it, unreadable, rather than staying open
// and holding its turn open for the rest of the episode (issue "What a new
// user hit", point 1). The call is the one its id names, when that could be
// read; else the oldest call its log leaves unanswered after it (endLog).
func (b *builder) damaged(li int, t int64, e *mcplog.Entry) {
	if e.From == mcplog.FromClient || e.From == mcplog.FromContext {
		return // a host line: not an answer
	}
	if id := e.Bad.ID; id != nil && e.Bad.Response {
		if q := b.open[idKey{li, string(bytes.TrimSpace(id))}]; len(q) > 0 {
			b.unreadable(li, q[0], t, -1)
			return
		}
	}
	b.unread = append(b.unread, unreadLine{log: li, step: len(b.steps)})
	b.steps = append(b.steps, Step{Kind: stepDead, TMS: t})
}

// unreadable marks call c of log li answered by a line that could not be
// read, at time t: at the placeholder step at, or with a new step when at
// is -1.
func (b *builder) unreadable(li, c int, t int64, at int) {
	call := b.calls[c]
	key := idKey{li, call.ID}
	q := b.open[key]
	for i, x := range q {
		if x == c {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(b.open, key)
	} else {
		b.open[key] = q
	}
	call.Unreadable = true
	if call.Cancelled {
		return
	}
	step := Step{Kind: StepAnswer, TMS: t, Call: c}
	if at >= 0 {
		b.steps[at] = step
	} else {
		b.steps = append(b.steps, step)
	}
	b.answerStep[c] = len(b.steps) - 1
	if at >= 0 {
		b.answerStep[c] = at
	}
}

// context adds a conversation line, unless another log gave it already.
func (b *builder) context(li int, t int64, msg json.RawMessage) {
	role, text, ok := mcpmsg.ReadChat(msg)
	if !ok {
		return
	}
	m := Message{Role: role, Text: text}
	if len(b.logs) > 1 {
		for j := b.cursor[li]; j < len(b.conv); j++ {
			if b.conv[j] == m {
				b.cursor[li] = j + 1
				return
			}
		}
	}
	b.conv = append(b.conv, m)
	b.cursor[li] = len(b.conv)
	b.ep.Events = append(b.ep.Events, Event{Type: EventMessage, TMS: t, Message: &m})
	b.steps = append(b.steps, Step{Kind: StepSaid, TMS: t, Text: m.Text})
}

// message reads one JSON-RPC message of a log line, as jsonrpc.Classify
// and mcpmsg read it for the proxy: one reading of the wire.
func (b *builder) message(li int, t int64, from string, m jsonrpc.Message) {
	key := idKey{li, string(m.ID)}
	caller := from == mcplog.FromClient || from == mcplog.FromProxy
	switch {
	case m.Kind == jsonrpc.Request && caller:
		delete(b.answered, key)
		delete(b.lists, key)
		if from == mcplog.FromClient && b.ep.ClientName == "" {
			b.ep.ClientName = mcpmsg.ReadRequestMeta(m.Params).ClientName
		}
		switch m.Method {
		case mcpmsg.MethodToolsCall:
			b.call(li, t, from, m.ID, m.Params)
		case mcpmsg.MethodToolsList:
			b.lists[key] = true
		case mcpmsg.MethodInitialize:
			if from == mcplog.FromClient && b.ep.ClientName == "" {
				b.ep.ClientName = mcpmsg.ReadInitialize(m.Params).ClientName
			}
		}
	case m.Kind == jsonrpc.Notification && caller && m.Method == mcpmsg.MethodCancelled:
		id := mcpmsg.CancelledID(m.Params)
		if id == nil {
			return
		}
		k := idKey{li, string(bytes.TrimSpace(id))}
		// The call stays open: a response that still comes is its result,
		// though the agent no longer reads it.
		q := b.open[k]
		for i := len(q) - 1; i >= 0; i-- { // the newest call of that id
			if c := q[i]; !b.calls[c].Cancelled {
				b.calls[c].Cancelled = true
				b.steps = append(b.steps, Step{Kind: StepCancel, TMS: t, Call: c})
				break
			}
		}
	case m.Kind == jsonrpc.Response && m.ID != nil && (from == mcplog.FromServer || from == mcplog.FromProxy):
		b.response(li, t, from, key, m)
	}
}

func (b *builder) call(li int, t int64, from string, id, params json.RawMessage) {
	p := mcpmsg.ReadCall(params) // a call without usable params is still a call
	if from == mcplog.FromClient && mcpmsg.IsRetry(params) {
		rk := retryKey{li, mcpmsg.CallKey(p.Name, p.Args)}
		if q := b.waiting[rk]; len(q) > 0 {
			// The host sends a call again with the input the server asked
			// for: the call's answer is this request's.
			if len(q) == 1 {
				delete(b.waiting, rk)
			} else {
				b.waiting[rk] = q[1:]
			}
			k := idKey{li, string(id)}
			b.open[k] = append(b.open[k], q[0])
			return
		}
	}
	c := b.addCall(li, t, id, p.Name, p.Args, callerOf(from, id))
	k := idKey{li, string(id)}
	b.open[k] = append(b.open[k], c.Index)
}

// addCall adds a call to the episode and its timeline.
func (b *builder) addCall(li int, t int64, id json.RawMessage, tool string, args json.RawMessage, by Actor) *Call {
	c := &Call{
		Index:  len(b.calls),
		ID:     string(id),
		Server: b.names[li],
		Tool:   b.toolName(li, tool),
		Args:   args,
		By:     by,
	}
	b.calls = append(b.calls, c)
	b.callLog = append(b.callLog, li)
	b.callStep = append(b.callStep, len(b.steps))
	b.callTool = append(b.callTool, tool) // its key only when input is asked for: most calls never need one
	b.answerStep = append(b.answerStep, -1)
	b.ep.Events = append(b.ep.Events, Event{Type: EventCall, TMS: t, Call: c})
	b.steps = append(b.steps, Step{Kind: StepCall, TMS: t, Call: c.Index, By: by, Values: ArgValues(c.Args)})
	return c
}

func (b *builder) toolName(li int, tool string) string {
	if b.qualify {
		return QualifiedName(b.names[li], tool)
	}
	return tool
}

func (b *builder) response(li int, t int64, from string, key idKey, m jsonrpc.Message) {
	if b.lists[key] {
		if m.Result != nil {
			b.toolsList(li, m.Result)
		}
		if from == mcplog.FromServer {
			return // the proxy may answer it again with its own version
		}
		delete(b.lists, key)
		return
	}
	if q := b.open[key]; len(q) > 0 {
		c := q[0]
		if len(q) == 1 {
			delete(b.open, key)
		} else {
			b.open[key] = q[1:]
		}
		call := b.calls[c]
		if from == mcplog.FromServer && call.By == Agent && m.Result != nil && mcpmsg.InputRequired(m.Result) {
			// Not the answer: the server asks for input, and the host
			// sends the call again with it.
			if !call.Cancelled {
				rk := retryKey{li, mcpmsg.CallKey(b.callTool[c], call.Args)}
				b.waiting[rk] = append(b.waiting[rk], c)
			}
			return
		}
		if from == mcplog.FromProxy {
			b.commitRefused(li, t, call, m)
		}
		res := resultOf(m)
		res.CallIndex = c
		call.Result = res
		b.ep.Events = append(b.ep.Events, Event{Type: EventResult, TMS: t, Result: res})
		if call.Cancelled {
			return
		}
		if from == mcplog.FromServer && call.By == Agent {
			b.answered[key] = c
		}
		b.answerStep[c] = len(b.steps)
		b.steps = append(b.steps, Step{Kind: StepAnswer, TMS: t, Call: c, Text: res.Text})
		return
	}
	if c, ok := b.answered[key]; ok && from == mcplog.FromProxy {
		// The proxy held the server's response and answers the agent now,
		// with its lookups: that is when the agent can read it.
		delete(b.answered, key)
		if s := b.answerStep[c]; s >= 0 {
			b.steps[s].Kind = stepDead
		}
		b.answerStep[c] = len(b.steps)
		b.steps = append(b.steps, Step{Kind: StepAnswer, TMS: t, Call: c, Text: resultOf(m).Text})
	}
}

// stepDead marks a step superseded by a later one; InferTurns ignores it.
const stepDead StepKind = 255

// resultOf reads a response to a tools/call.
func resultOf(m jsonrpc.Message) *Result {
	r := mcpmsg.ResultOf(m)
	return &Result{Raw: m.Raw, Text: r.Text(), IsError: r.IsError}
}

// toolsList adds the tools a tools/list result lists; a later listing of a
// tool replaces an earlier one. One odd tool does not hide the others.
func (b *builder) toolsList(li int, result json.RawMessage) {
	listed, _ := mcpmsg.ReadTools(result)
	for _, tl := range listed {
		tool := Tool{
			Name:        b.toolName(li, tl.Name),
			Server:      b.names[li],
			Kind:        KindOf(tl.Annotations),
			InputSchema: tl.InputSchema,
			Annotations: tl.Annotations,
		}
		if i, ok := b.toolIndex[tool.Name]; ok {
			b.ep.Tools[i] = tool
			continue
		}
		b.toolIndex[tool.Name] = len(b.ep.Tools)
		b.ep.Tools = append(b.ep.Tools, tool)
	}
}

// endLog cancels the calls a log ended without an answer to, there; a call
// followed by a damaged line that answered no other call is taken to be
// answered by it, oldest call first.
func (b *builder) endLog(li int, t int64) {
	var left []int
	for k, q := range b.open {
		if k.log == li {
			left = append(left, q...)
		}
	}
	sort.Ints(left)
	for _, c := range left {
		for i := range b.unread {
			u := &b.unread[i]
			if u.log == li && !u.used && u.step > b.callStep[c] {
				u.used = true
				b.unreadable(li, c, b.steps[u.step].TMS, u.step)
				break
			}
		}
	}
	var ended []int
	for k, q := range b.open {
		if k.log != li {
			continue
		}
		delete(b.open, k)
		for _, c := range q {
			if !b.calls[c].Cancelled {
				ended = append(ended, c)
			}
		}
	}
	for k, q := range b.waiting {
		if k.log == li {
			delete(b.waiting, k)
			ended = append(ended, q...) // never sent again: never answered
		}
	}
	sort.Ints(ended)
	for _, c := range ended {
		b.calls[c].Cancelled = true
		b.steps = append(b.steps, Step{Kind: StepCancel, TMS: t, Call: c})
	}
}

// turns infers the LLM turns and fills in Call.Turn and Episode.Turns.
func (b *builder) turns() {
	steps := b.steps[:0:0]
	for _, s := range b.steps {
		if s.Kind != stepDead {
			steps = append(steps, s)
		}
	}
	turnOf := InferTurns(steps)
	callTime := make([]int64, len(b.calls))
	resTime := make([]int64, len(b.calls))
	for _, ev := range b.ep.Events {
		switch ev.Type {
		case EventCall:
			callTime[ev.Call.Index] = ev.TMS
			resTime[ev.Call.Index] = ev.TMS
		case EventResult:
			resTime[ev.Result.CallIndex] = ev.TMS
		}
	}
	for i, c := range b.calls {
		c.Turn = turnOf[i]
		for len(b.ep.Turns) <= c.Turn {
			b.ep.Turns = append(b.ep.Turns, Turn{Index: len(b.ep.Turns), StartMS: callTime[i], EndMS: callTime[i]})
		}
		tn := &b.ep.Turns[c.Turn]
		tn.Calls = append(tn.Calls, i)
		tn.StartMS = min(tn.StartMS, callTime[i])
		tn.EndMS = max(tn.EndMS, resTime[i])
	}
}
