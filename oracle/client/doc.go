// Package client answers the oracle package's questions: the three modes
// of --oracle and the answer cache they share (--oracle-cache). It is the
// part of the System-One model that does I/O, kept apart from the
// questions so that flow, guards and judge never import net/http; only
// the command lines (internal/oraclecli, internal/cli, internal/mcpcli)
// import it, and hand what it builds to the rest as an oracle.Oracle:
//
//	cache, err := client.OpenCache(dir, warn)   // --oracle-cache, shared by processes
//	o, err := client.New(client.Config{Mode: client.ModeJev, URL: url, Model: model, Cache: cache})
//	judge := oracle.Limit(o, 100)               // per session: --confirm-questions
//
// There are three modes (--oracle). Jev speaks the OpenAI-compatible
// chat-completions protocol (vLLM, llama.cpp's server, Ollama and the
// hosted providers serve it) to a base URL, with the key from
// TYPESAFE_API_KEY or TYPESAFE_API_KEY_FILE; it answers from the cache
// when it can and caches what the model says. Replay answers from the
// cache only. Mock answers by a fixed rule (see Mock) with no network.
//
// Privacy (docs/privacy.md): the key is read once, at construction; it is
// sent only in the Authorization header and never reaches a log, a cache
// entry or an error. A cache entry holds the answer and the request's hash,
// not the question's text.
package client
