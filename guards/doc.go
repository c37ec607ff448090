// Package guards holds the policy rules hoist-mcp --guards checks each of
// the agent's writes against before the server sees it, and hoist guards
// runs over recorded trajectories (issue 10; manual, "Active mode",
// --guards). The rules are written from the policies τ²-bench gave its
// agents, per domain (retail, airline), each with a stable id such as
// retail.cancel_reason.
//
// A Session is one conversation's facts: what the session has shown the
// agent. That is every tool result it got (Result), the lookups a flow
// appended to one, whichever proxy's flow made them (they arrive inside the
// result, after mcpmsg.Banner), and the conversation the host writes to
// --context (Message). Check asks every rule that covers a write for its
// verdict, from those facts and the call's arguments:
//
//	s := guards.NewSession(guards.Config{Domain: "retail"})
//	s.Result("get_order_details", args, orderJSON, false) // facts, as the agent saw them
//	c := s.Check("cancel_pending_order", callArgs)         // before the server sees the call
//	if c.Refused != nil {
//		answer(c.Refusal()) // the agent's isError result; the call is not sent
//	} else {
//		s.Sent("cancel_pending_order", callArgs) // it went to the server
//	}
//
// A rule that lacks a fact it needs (the order was never shown, there is no
// conversation) does not refuse: its verdict is Lacks, and the call goes
// on. Each rule is enforced or only logged (Mode), per rule, with a default
// chosen from how often it would refuse writes of successful τ²-bench
// episodes (docs/guards.md). The confirmation rules (retail.confirmed,
// airline.confirmed) are only ever logged: a word list cannot tell a
// confirmation from a request, and the confirmation judge is meant to
// replace it (Confirmation carries what that judge will be asked).
//
// A Session is owned by one goroutine: it is not safe for concurrent use.
package guards
