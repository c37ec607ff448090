package export

import (
	"time"
	"unsafe"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// colType is a column's logical type; each format maps it to its own.
type colType int

const (
	tString     colType = iota
	tInt32              // an index
	tInt64              // a count or a duration in milliseconds
	tFloat64            // a reward
	tBool               //
	tTimestamp          // milliseconds, UTC
	tStringList         // a list of names
	tJSON               // JSON kept as a string
)

func (t colType) String() string {
	return [...]string{"string", "int32", "int64", "double", "boolean", "timestamp[ms, UTC]", "list<string>", "string (JSON)"}[t]
}

type column struct {
	Name     string
	Type     colType
	Nullable bool
	Doc      string
}

// dataset is one exported table. Rows are []any in column order: string,
// int (tInt32), int64, float64, bool, time.Time, []string, or nil where the
// column is nullable.
type dataset struct {
	Name    string
	Doc     string
	Columns []column
	// Flow marks a dataset of the flow logs (decisions, runs): written only
	// when the store holds some.
	Flow bool
	rows func(ep *episode.Episode, s store.Session, fl *store.Flow, emit func([]any) error) error
}

// Names follow OpenTelemetry's GenAI and MCP semantic conventions where one
// exists (gen_ai.tool.name → tool_name, mcp.method.name → method,
// jsonrpc.request.id → request_id), in snake_case (issue 3, point 6).
var datasets = []*dataset{
	{
		Name: "sessions",
		Doc:  "One row per session: a host session recorded by hoist-mcp (its servers' logs merged) or a τ²-bench simulation.",
		Columns: []column{
			{"session_id", tString, false, "the session's id (the first log's session, or <results file>#<simulation id>)"},
			{"source", tString, false, "mcp (session logs) or tau2 (a τ²-bench results file)"},
			{"host_session", tString, false, "the host session the proxies ran in (HOIST_SESSION, or host-<pid>)"},
			{"agent_model", tString, true, "the model that drove the agent (the log header's agent_model, τ²-bench's agent), null when unknown"},
			{"client_name", tString, true, "the MCP client that spoke to the server (initialize's clientInfo.name), null when unknown; not the model"},
			{"task_id", tString, true, "the τ²-bench task, when known"},
			{"trial", tInt32, false, "the τ²-bench trial"},
			{"reward", tFloat64, true, "the task's reward, null when unknown"},
			{"started_at", tTimestamp, false, "when the session started"},
			{"ended_at", tTimestamp, false, "started_at plus duration_ms"},
			{"duration_ms", tInt64, false, "time from the start to the last event"},
			{"servers", tStringList, false, "the MCP servers, in log order"},
			{"llm_turns", tInt64, false, "LLM turns that called tools (inferred from timing for logs, exact for τ²-bench)"},
			{"calls", tInt64, false, "tool calls, the proxy's own lookups included"},
			{"reads", tInt64, false, "calls of tools annotated read-only"},
			{"writes", tInt64, false, "calls of tools annotated as not read-only"},
			{"errors", tInt64, false, "calls whose result was an error"},
			{"messages", tInt64, false, "conversation messages (user and assistant)"},
			{"bad_lines", tInt64, false, "lines of the session's logs that could not be read (hoist sessions --problems)"},
		},
		rows: func(ep *episode.Episode, s store.Session, _ *store.Flow, emit func([]any) error) error {
			var task, reward, model, client any
			if ep.TaskID != "" {
				task = ep.TaskID
			}
			if ep.AgentModel != "" {
				model = ep.AgentModel
			}
			if ep.ClientName != "" {
				client = ep.ClientName
			}
			if ep.Reward != nil {
				reward = *ep.Reward
			}
			return emit([]any{ep.ID, ep.Source, ep.HostSession, model, client, task, ep.Trial, reward,
				ep.Started, ep.Started.Add(time.Duration(s.DurationMS) * time.Millisecond), s.DurationMS, s.Servers,
				int64(s.Turns), int64(s.Calls), int64(s.Reads), int64(s.Writes), int64(s.Errors), int64(s.Messages), int64(s.BadLines)})
		},
	},
	{
		Name: "turns",
		Doc:  "One row per LLM turn: the tool calls the agent made from one model response.",
		Columns: []column{
			{"session_id", tString, false, "the session (sessions.session_id)"},
			{"turn_index", tInt32, false, "the turn's position in its session, from 0"},
			{"started_at", tTimestamp, false, "the turn's first call"},
			{"ended_at", tTimestamp, false, "the turn's last result"},
			{"duration_ms", tInt64, false, "ended_at minus started_at"},
			{"calls", tInt64, false, "the turn's calls"},
			{"errors", tInt64, false, "the turn's calls whose result was an error"},
		},
		rows: func(ep *episode.Episode, _ store.Session, _ *store.Flow, emit func([]any) error) error {
			calls := ep.Calls()
			for _, t := range ep.Turns {
				var errs int64
				for _, ci := range t.Calls {
					if ci >= 0 && ci < len(calls) && calls[ci].Result != nil && calls[ci].Result.IsError {
						errs++
					}
				}
				if err := emit([]any{ep.ID, t.Index, at(ep, t.StartMS), at(ep, t.EndMS), t.EndMS - t.StartMS, int64(len(t.Calls)), errs}); err != nil {
					return err
				}
			}
			return nil
		},
	},
	{
		Name: "calls",
		Doc:  "One row per tools/call, with its result (the first response to it).",
		Columns: []column{
			{"session_id", tString, false, "the session (sessions.session_id)"},
			{"call_index", tInt32, false, "the call's position in its session, from 0"},
			{"turn_index", tInt32, false, "the LLM turn it belongs to (turns.turn_index)"},
			{"request_id", tString, false, "jsonrpc.request.id: the JSON-RPC id as sent (raw JSON text: 3, \"hoist-1\")"},
			{"method", tString, false, "mcp.method.name: always tools/call"},
			{"server", tString, false, "the MCP server the call went to"},
			{"tool_name", tString, false, "gen_ai.tool.name: the tool, server::tool when the session has several servers"},
			{"tool_kind", tString, false, "read, write or generic (unknown), from the tool's readOnlyHint"},
			{"actor", tString, false, "agent, or proxy for a flow's own lookups (ids hoist-…)"},
			{"arguments", tJSON, true, "the call's arguments, raw JSON"},
			{"called_at", tTimestamp, false, "when the proxy read the call"},
			{"answered_at", tTimestamp, true, "when the proxy read its result; null when never answered"},
			{"duration_ms", tInt64, true, "answered_at minus called_at"},
			{"is_error", tBool, false, "a JSON-RPC error, or a result with isError: true"},
			{"cancelled", tBool, false, "cancelled, or left unanswered when its log ended"},
			{"answer_unreadable", tBool, false, "answered, but the log line of its answer could not be read (result and answered_at are null)"},
			{"result_text", tString, true, "the result's text items joined by newlines, or the error message"},
			{"result", tJSON, true, "the response as sent, raw JSON"},
		},
		rows: func(ep *episode.Episode, _ store.Session, _ *store.Flow, emit func([]any) error) error {
			answered := map[int]int64{}
			for _, ev := range ep.Events {
				if ev.Result != nil {
					if _, ok := answered[ev.Result.CallIndex]; !ok {
						answered[ev.Result.CallIndex] = ev.TMS
					}
				}
			}
			// The largest dataset: one row slice for the episode's calls
			// (each writer copies what it appends), and the raw JSON seen
			// as strings in place, not copied for the writer to copy again.
			row := make([]any, 18)
			id := any(ep.ID)
			for _, ev := range ep.Events {
				c := ev.Call
				if c == nil {
					continue
				}
				kind := episode.Generic
				if t := ep.Tool(c.Tool); t != nil && t.Kind != "" {
					kind = t.Kind
				}
				var args, ansAt, dur, text, res any
				if len(c.Args) > 0 {
					args = bytesString(c.Args)
				}
				isErr := false
				if r := c.Result; r != nil {
					text = r.Text
					if len(r.Raw) > 0 {
						res = bytesString(r.Raw)
					}
					isErr = r.IsError
					if ms, ok := answered[c.Index]; ok {
						ansAt, dur = at(ep, ms), ms-ev.TMS
					}
				}
				row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8] = id, c.Index, c.Turn, c.ID, "tools/call", c.Server, c.Tool, string(kind), string(c.By)
				row[9], row[10], row[11], row[12], row[13], row[14], row[15], row[16], row[17] = args, at(ep, ev.TMS), ansAt, dur, isErr, c.Cancelled, c.Unreadable, text, res
				if err := emit(row); err != nil {
					return err
				}
			}
			return nil
		},
	},
	{
		Name: "messages",
		Doc:  "One row per conversation message (from the host's --context file, or a τ²-bench simulation).",
		Columns: []column{
			{"session_id", tString, false, "the session (sessions.session_id)"},
			{"message_index", tInt32, false, "the message's position in its session, from 0"},
			{"role", tString, false, "user or assistant"},
			{"content", tString, false, "the message's text"},
			{"sent_at", tTimestamp, false, "when the proxy logged it"},
		},
		rows: func(ep *episode.Episode, _ store.Session, _ *store.Flow, emit func([]any) error) error {
			i := 0
			for _, ev := range ep.Events {
				if m := ev.Message; m != nil {
					if err := emit([]any{ep.ID, i, m.Role, m.Text, at(ep, ev.TMS)}); err != nil {
						return err
					}
					i++
				}
			}
			return nil
		},
	},
	{
		Name: "decisions",
		Doc:  "One row per decision of a flow hoist-mcp served (--flow): the lookups offered, the rule's greedy choice, what was taken and its propensity. From the flow logs; written only when the store holds some.",
		Flow: true,
		Columns: []column{
			{"session_id", tString, false, "the session (sessions.session_id)"},
			{"server", tString, false, "the MCP server whose proxy served the flow"},
			{"log_session", tString, false, "the session log's session id; the flow log is <log_session>.flow.jsonl"},
			{"run_index", tInt32, false, "the run it belongs to (runs.run_index): the run line logged after it"},
			{"decision_index", tInt32, false, "the decision's position in its run, from 0"},
			{"site", tString, false, "the decision's address in its run: decide#N"},
			{"offer_count", tInt64, false, "lookups offered"},
			{"offers", tJSON, false, "the offers, raw JSON: tool, args, binding, from, p_reach, p_habit, p_binding, support"},
			{"greedy", tInt32, false, "the rule's own choice: an index into offers, -1 for stop"},
			{"taken", tInt32, false, "what was taken: an index into offers, -1 for stop"},
			{"propensity", tFloat64, false, "the probability that the rule took what it took"},
			{"taken_tool", tString, true, "the tool of the offer taken; null when the decision stopped"},
			{"taken_args", tJSON, true, "the arguments of the offer taken, raw JSON; null when it stopped"},
			{"decider", tString, false, "the rule's decider: reach or habit"},
			{"threshold", tFloat64, false, "the rule's threshold on P(tool) × P(binding matched)"},
			{"epsilon", tFloat64, false, "the rule's exploration rate ε"},
			{"shadow", tBool, false, "decided in shadow: logged, nothing looked up"},
			{"log_line", tInt64, false, "the line in the flow log, from 1"},
			{"raw", tJSON, false, "the line as logged"},
		},
		rows: func(ep *episode.Episode, _ store.Session, fl *store.Flow, emit func([]any) error) error {
			if fl == nil {
				return nil
			}
			for _, d := range fl.Decisions {
				var tool, args any
				if o := d.TakenOffer(); o != nil {
					tool = o.Tool
					if len(o.Args) > 0 {
						args = string(o.Args)
					}
				}
				rule := d.Rule
				if err := emit([]any{ep.ID, serverName(ep, d.Server), d.Session, d.Run, d.Index, d.Site, int64(len(d.Offers)), d.OffersJSON(),
					d.Greedy, d.Taken, d.Propensity, tool, args, string(rule.Decider), rule.Threshold, rule.Epsilon, d.Shadow, int64(d.Line), d.Raw}); err != nil {
					return err
				}
			}
			return nil
		},
	},
	{
		Name: "runs",
		Doc:  "One row per run of a flow after one of the agent's calls: its sites as [address, value, logp], its surprise and the log-probability of its decisions. From the flow logs; written only when the store holds some.",
		Flow: true,
		Columns: []column{
			{"session_id", tString, false, "the session (sessions.session_id)"},
			{"server", tString, false, "the MCP server whose proxy served the flow"},
			{"log_session", tString, false, "the session log's session id"},
			{"run_index", tInt32, false, "the run's position in its flow log, from 0"},
			{"call_tool", tString, false, "the tool of the agent's call the run followed"},
			{"failed", tBool, false, "whether that call failed"},
			{"max_lookups", tInt64, false, "the run's budget of lookups (the caps left)"},
			{"fold", tInt32, false, "the fold of the flow that served it (-1: all folds)"},
			{"decider", tString, false, "the rule's decider: reach or habit"},
			{"threshold", tFloat64, false, "the rule's threshold"},
			{"epsilon", tFloat64, false, "the rule's exploration rate ε"},
			{"decisions", tInt64, false, "its decision sites (decide#N): rows of decisions"},
			{"lookups", tInt64, false, "its answer sites (obs#N): lookups made and answered"},
			{"sites", tJSON, false, "every site in the order visited, [address, value, logp] (logp null for −Inf), raw JSON"},
			{"surprise", tFloat64, false, "the surprise of the answers, in nats (−Σ logp over obs sites)"},
			{"logp_policy", tFloat64, true, "Σ logp over the decision sites: the log-probability of its decisions under its rule; null when one is −Inf"},
			{"shadow", tBool, false, "served in shadow: decided and logged, nothing looked up"},
			{"log_line", tInt64, false, "the line in the flow log, from 1"},
			{"raw", tJSON, false, "the line as logged"},
		},
		rows: func(ep *episode.Episode, _ store.Session, fl *store.Flow, emit func([]any) error) error {
			if fl == nil {
				return nil
			}
			for _, r := range fl.Runs {
				var logp any
				if lp, ok := r.FiniteLogPolicy(); ok {
					logp = lp
				}
				decisions, lookups := r.Counts()
				rule := r.Rule
				if err := emit([]any{ep.ID, serverName(ep, r.Server), r.Session, r.Index, r.Call, r.Failed, int64(r.MaxLookups), r.Fold,
					string(rule.Decider), rule.Threshold, rule.Epsilon, int64(decisions), int64(lookups), r.SitesJSON(), r.Surprise, logp, r.Shadow,
					int64(r.Line), r.Raw}); err != nil {
					return err
				}
			}
			return nil
		},
	},
}

// serverName returns the name of the episode's server i.
func serverName(ep *episode.Episode, i int) string {
	if i >= 0 && i < len(ep.Servers) {
		return ep.Servers[i].Name
	}
	return ""
}

// bytesString is b as a string without a copy, for a value a writer copies
// when it appends it (Arrow's builders, encoding/json) and that nothing
// changes meanwhile: the episodes an export reads are never written to.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func at(ep *episode.Episode, ms int64) time.Time {
	return ep.Started.Add(time.Duration(ms) * time.Millisecond)
}
