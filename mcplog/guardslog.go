package mcplog

import "encoding/json"

// The guards log is the file hoist-mcp --guards writes beside a session
// log, <session>.guards.jsonl (or --guards-log): one GuardsCheck line per
// write the guards checked, with every rule's verdict, whether one refused
// it, and what the confirmation judge would be asked. These are its one
// definition: the proxy marshals them with encoding/json.

// GuardsSuffix ends a guards log's name beside its session log.
const GuardsSuffix = ".guards.jsonl"

// TypeCheck is the guards log's line type.
const TypeCheck = "check"

// GuardVerdict is one rule's verdict on one write.
type GuardVerdict struct {
	Rule string `json:"rule"`
	// Verdict is "allow", "refuse" or "lacks" (a fact the rule needs was
	// never shown, so it let the write through).
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Lacks   string `json:"lacks,omitempty"`
	// Enforced is true when the rule's refusal stops the write.
	Enforced bool `json:"enforced"`
}

// GuardConfirmation is what the confirmation judge is asked about a write:
// what the agent said last before the customer's last message, and that
// message.
type GuardConfirmation struct {
	AgentSaid string `json:"agent_said,omitempty"`
	UserSaid  string `json:"user_said,omitempty"`
}

// GuardsCheck is a guards log's line: the check of one write.
type GuardsCheck struct {
	Type string `json:"type"` // TypeCheck
	// ID is the call's JSON-RPC id: the host's, or for a call hoist_commit
	// made, the proxy's (hoist-commit-<n>), with Commit the host's id of
	// that hoist_commit.
	ID     json.RawMessage `json:"id"`
	Commit json.RawMessage `json:"commit,omitempty"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"arguments"`
	// Verdicts are the rules' that cover the tool, in the domain's order.
	Verdicts []GuardVerdict `json:"verdicts"`
	// Refused is the enforced rule that refused the write, "" when it went
	// to the server; Refusal is the text the agent got.
	Refused string `json:"refused,omitempty"`
	Refusal string `json:"refusal,omitempty"`
	// Confirmation is set for a write the confirmation rule read.
	Confirmation *GuardConfirmation `json:"confirmation,omitempty"`
	// CheckUS is how long the check took, in microseconds.
	CheckUS int64 `json:"check_us"`
}

// TypeLimit is the guards log's line type for a call a limit refused.
const TypeLimit = "limit"

// GuardsLimit is a guards log's line: a tools/call that --limit or
// --max-calls refused, which never reached the server. It sits beside the
// guards' checks, though no rule read the call, so that an operator finds
// every refusal in one place (docs/limits.md).
type GuardsLimit struct {
	Type string `json:"type"` // TypeLimit
	// ID is the call's JSON-RPC id; null for a step of hoist_commit, which
	// is given none unless it is sent, with Commit the host's id of that
	// hoist_commit.
	ID     json.RawMessage `json:"id"`
	Commit json.RawMessage `json:"commit,omitempty"`
	Tool   string          `json:"tool"`
	// Limit is what refused it: "--limit TOOL=N/PERIOD" as given, or
	// "--max-calls N".
	Limit string `json:"limit"`
	// Frees is when the limit lets a call through again (RFC 3339, UTC,
	// milliseconds); "" for --max-calls, which does not free in the
	// session.
	Frees string `json:"frees,omitempty"`
	// Refusal is the text the agent got.
	Refusal string `json:"refusal"`
}
