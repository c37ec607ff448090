package mcplog

import "encoding/json"

// The confirm log is the file hoist-mcp --confirm-judge writes beside a
// session log, <session>.confirm.jsonl (or --confirm-log): one
// ConfirmJudgment line per write the judge was asked about. These types
// are its one definition: the proxy marshals them with encoding/json, and
// readers (the console, scripts) unmarshal them.

// ConfirmSuffix ends a confirm log's name beside its session log.
const ConfirmSuffix = ".confirm.jsonl"

// TypeJudgment is the confirm log's line type.
const TypeJudgment = "judgment"

// ConfirmAnswer is one of the model's answers about a write.
type ConfirmAnswer struct {
	// Question is "confirm" (did the customer's reply explicitly agree?),
	// "proposed" or "described" (the second question).
	Question string `json:"question"`
	// Key is the question's cache key, in --oracle-cache.
	Key      string   `json:"key"`
	Answered bool     `json:"answered"`
	PYes     *float64 `json:"p_yes,omitempty"`
	// From says how P(yes) was read: "logprobs", "text" or "mock".
	From   string `json:"from,omitempty"`
	Cached bool   `json:"cached,omitempty"`
	// Why and Reason say why there is no answer ("unset", "miss",
	// "spent", "unaskable", "failed", "canceled"); such an answer refuses
	// nothing.
	Why    string `json:"why,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SecondShadow marks a second answer that was only logged.
	SecondShadow bool `json:"second_shadow,omitempty"`
}

// ConfirmMismatch is one value of a call of which the exchange named
// another of the same kind (the proposal check).
type ConfirmMismatch struct {
	Argument string   `json:"argument"`
	Value    string   `json:"value"`
	Named    []string `json:"named"`
}

// ConfirmJudgment is a confirm log's line: the judgment of one write.
type ConfirmJudgment struct {
	Type string `json:"type"` // TypeJudgment
	// ID is the call's JSON-RPC id, as in the guards log; Commit the
	// hoist_commit it was made for.
	ID     json.RawMessage `json:"id"`
	Commit json.RawMessage `json:"commit,omitempty"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"arguments"`
	// Rule is the confirmation rule that checked the write, and WordList
	// its word list's verdict ("allow", "refuse"), only ever logged.
	Rule     string `json:"rule"`
	WordList string `json:"word_list"`
	// Answers are the model's, first the confirmation's, then the second
	// question's when it was asked.
	Answers []ConfirmAnswer `json:"answers"`
	// Failed is true when the answers say the write must not go on;
	// Enforced when it was refused for that (--confirm-judge enforce).
	Failed   bool `json:"failed"`
	Enforced bool `json:"enforced"`
	// Refusal is the text the agent got, when Enforced.
	Refusal string `json:"refusal,omitempty"`
	// WaitedUS is how long the write waited for the judge, in
	// microseconds.
	WaitedUS int64 `json:"waited_us"`
	// ProposalCheck lists the call's values of which the exchange named
	// another (logged only, no model).
	ProposalCheck []ConfirmMismatch `json:"proposal_check,omitempty"`
	// Approval is the leave the verdict gave, when it did not fail the
	// write: {"digest", "policy", "expires_unix_ms"} (docs/approvals.md);
	// ApprovalRefused says why it did not hold for the call to be sent.
	Approval        json.RawMessage `json:"approval,omitempty"`
	ApprovalRefused string          `json:"approval_refused,omitempty"`
}
