// Package oracle puts yes/no questions to the System-One model and keeps
// its answers: the flow's questions (will the agent use this lookup?) and
// the confirmation judge's (did the customer's reply explicitly agree to
// this exact change?), as the manual's "Active mode" describes --oracle,
// --flow-decider arbiter, --flow-questions and --confirm-judge.
//
// One Oracle serves every caller of a process: the proxy's flow and judge,
// hoist confirm, and the arbiter in hoist learn and hoist promote. They
// build their questions with this package's builders (Confirmation,
// Proposed, Described, Lookup), so the same moment of a conversation is
// the same question wherever it is asked, and its answer is cached once:
//
//	cache, err := oracle.OpenCache(dir, warn)   // --oracle-cache, shared by processes
//	o, err := oracle.New(oracle.Config{Mode: oracle.ModeJev, URL: url, Model: model, Cache: cache})
//	judge := oracle.Limit(o, 100)               // per session: --confirm-questions
//	x := oracle.LastExchange(conversation)      // the agent's last words, the customer's reply
//	a := judge.Ask(ctx, oracle.Confirmation(x, oracle.Call{Tool: name, Arguments: args}))
//	if a.Answered && a.PYes < 0.5 { /* enforce: refuse the write */ }
//	// a.Key goes to the confirm log; !a.Answered refuses nothing (a.Why, a.Reason say why)
//
// There are three modes (--oracle). Jev speaks the OpenAI-compatible
// chat-completions protocol (vLLM, llama.cpp's server, Ollama and the
// hosted providers serve it) to a base URL, with the key from
// TYPESAFE_API_KEY or TYPESAFE_API_KEY_FILE; it answers from the cache
// when it can and caches what the model says. Replay answers from the
// cache only. Mock answers by a fixed rule (see Mock) with no network.
//
// An answer is P(yes). Jev reads it from the log-probabilities of the
// model's first answer token when the server returns them, and from the
// answer's first word (1 or 0) when it does not. A question that cannot be
// answered (no key, a cache miss under replay, an error, a timeout, the
// session's questions spent) gets an Answer with Answered false and the
// reason: callers treat it as "no opinion", so the judge refuses nothing.
//
// Privacy (docs/privacy.md): the key is read once, at construction; it is
// sent only in the Authorization header and never reaches a log, a cache
// entry or an error. A cache entry holds the answer and the request's hash,
// not the question's text.
package oracle
