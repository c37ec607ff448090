// Package oracle holds the yes/no questions hoist puts to the System-One
// model, and nothing that asks them: the flow's question (will the agent
// use this lookup?) and the confirmation judge's (did the customer's reply
// explicitly agree to this exact change?), as the manual's "Active mode"
// describes --oracle, --flow-decider arbiter, --flow-questions and
// --confirm-judge. It is pure: prompts and their versions (Question and
// its builders), the request a question makes and its cache key
// (RequestBody, Key), the reading of the model's answer (ReadAnswer),
// the Oracle interface its callers ask through, and a session's budget of
// questions (Limit). It does no I/O and imports no net/http, so flow,
// guards and judge, which import it, reach no network (internal/deptest
// keeps it so).
//
// The Oracles themselves live in oracle/client: jev, which asks the model
// over HTTP, replay and mock, and the answer cache they share. The command
// lines build one (internal/oraclecli) and hand it to the proxy's flow
// and judge, hoist confirm, and the arbiter in hoist learn and hoist
// promote. They build their questions with this package's builders
// (Confirmation, Proposed, Described, Lookup), so the same moment of a
// conversation is the same question wherever it is asked, and its answer
// is cached once:
//
//	judge := oracle.Limit(o, 100)               // o from oracle/client; per session: --confirm-questions
//	x := oracle.LastExchange(conversation)      // the agent's last words, the customer's reply
//	a := judge.Ask(ctx, oracle.Confirmation(x, oracle.Call{Tool: name, Arguments: args}))
//	if a.Answered && a.PYes < 0.5 { /* enforce: refuse the write */ }
//	// a.Key goes to the confirm log; !a.Answered refuses nothing (a.Why, a.Reason say why)
//
// An answer is P(yes), read from the log-probabilities of the model's
// first answer token when the server returns them, and from the answer's
// first word (1 or 0) when it does not (ReadAnswer). A question that
// cannot be answered (no key, a cache miss under replay, an error, a
// timeout, the session's questions spent) gets an Answer with Answered
// false and the reason: callers treat it as "no opinion", so the judge
// refuses nothing.
package oracle
