// Package flow is hoist's flow: the IR a flow file holds (versioned JSON with
// a JSON Schema, docs/flow.md), the binding expressions that say where each
// argument of a lookup comes from, the deciders (reach, habit) and the rule
// that serves a flow (threshold, greedy choice, ε-exploration with
// propensities), and the run record with its sites and surprise, which
// Rescore reproduces from a logged trace (issue 4, points 1 and 4;
// docs/flow-run.md).
//
// # Serving
//
// hoist-mcp serves a flow with a Session per proxy session:
//
//	f, err := flow.Load(path)                       // validated; errors name file and field
//	s, err := flow.NewSession(f, flow.Options{Rule, Caps, Server, Tools, TaskID, Rand, Shadow})
//	s.Listed(tools)                                 // tools/list: readOnlyHint false or a changed contract → never
//	i := s.Call(tool, args)                         // each of the agent's tools/call, as sent
//	s.Result(i, text, isError)                      // its response, held before it is handed back
//	run := s.Run(i)                                 // the flow runs at that site
//	for d := run.Next(); d.Taken >= 0; d = run.Next() {
//		// log d; unless Shadow, call d.Offers[d.Taken] (s.CallName(o.Tool), o.Args) as hoist-<n>
//		run.Answer(text, isError)                   // its answer: a site too (chained decisions)
//	}
//	rec := run.End()                                // log the run line
//
// Everything is counted: no decision asks anyone, so a decision takes
// microseconds. A Session is used from one goroutine (the proxy runs one
// flow at a time). The proxy's own lookups are recorded by the Run, never
// passed to Call. Calls in flight and lookups answered since the agent's
// last write are never looked up again. The caps are plain data (Caps); the
// per-call and per-session caps bound a run's lookups (RunRecord.MaxLookups).
// Rand is injected (math/rand/v2), so exploration reproduces under a seed.
//
// A run's sites are [address, value, logp]: decide#i with the lookup taken
// (or "stop") and the log-propensity of taking it, obs#j with "ok" or
// "error" and the log-probability of that outcome given how often the tool
// failed for the agent; surprise is −Σ logp over the answers, in nats.
// Rescore(f, rule, decisions, run) scores a logged run again from its
// decision lines and gives back every logp bit for bit under the rule that
// served it.
//
// # The flow log
//
// What a run logs, Decision (with its Offers and Rule) and RunRecord (with
// its RunSites), is defined once, beside the session log's lines, in
// package mcplog (FlowDecision, FlowOffer, FlowRule, FlowRun, FlowSite);
// the names here are aliases of those types, so the proxy that writes a
// line, ingest that reads it and the analyses that score it share one
// definition. The decision logic stays here: Propensities, the Session
// and its Run, and Rescore work on the logged types.
package flow
