package oracle

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Oracle answers yes/no questions with the probability of a yes.
//
// Ask never fails: a question it cannot answer gets an Answer with
// Answered false and the reason, which its callers treat as no opinion
// (the manual: "A judge that cannot answer refuses nothing"). An Ask that
// waits (jev's) stops when ctx is done, with Why set to Canceled. Every
// implementation in this package is safe for concurrent use by any number
// of goroutines.
type Oracle interface {
	Ask(ctx context.Context, q Question) Answer
}

// Answer is an oracle's answer to one question.
type Answer struct {
	// Key is the hash of the question's request (see Key): the name of
	// its cache entry, set on every answer, answered or not, so that logs
	// can name the question whichever mode asked it.
	Key string
	// Answered says whether PYes holds an answer.
	Answered bool
	// PYes is the probability of a yes, from 0 to 1, when Answered.
	PYes float64
	// From says how PYes was read: from the token log-probabilities, the
	// answer's text, or the mock's rule.
	From Source
	// Cached is true when the answer came from the cache.
	Cached bool
	// Why and Reason say why there is no answer, when Answered is false:
	// Why for a program to count, Reason for a person to read. Reason
	// never holds the key, nor the question's text (but for what a model
	// server's own error message may quote, clipped).
	Why    Why
	Reason string
}

// Source says how an answer's P(yes) was read.
type Source string

// The sources of an answer.
const (
	// FromLogprobs: the log-probabilities of the first answer token, the
	// yes tokens' share of the yes and no tokens' probability.
	FromLogprobs Source = "logprobs"
	// FromText: the answer's first word, yes (1) or no (0), from a server
	// that returned no log-probabilities.
	FromText Source = "text"
	// FromMock: the mock's rule.
	FromMock Source = "mock"
)

// Why says why a question got no answer.
type Why string

// The reasons for no answer.
const (
	// Unset: jev lacks what it needs to ask (the key, the URL or the
	// model name) and the cache does not hold the answer.
	Unset Why = "unset"
	// Miss: replay, and the cache does not hold the answer.
	Miss Why = "miss"
	// Spent: the session's questions (Limit) are spent.
	Spent Why = "spent"
	// Unaskable: the question lacks what it is about, such as a
	// confirmation question with no customer message to judge.
	Unaskable Why = "unaskable"
	// Failed: the model server could not be reached, refused the request,
	// took longer than the timeout, or answered neither yes nor no.
	Failed Why = "failed"
	// Canceled: the caller's context ended first.
	Canceled Why = "canceled"
)

// noAnswer returns the Answer of a question that gets none.
func noAnswer(key string, why Why, format string, args ...any) Answer {
	return Answer{Key: key, Why: why, Reason: fmt.Sprintf(format, args...)}
}

// settled takes the steps every mode takes first: it keys q, answers an
// Unaskable question so, and answers from cache (nil for none) when it
// holds q. done says whether a is the answer.
func settled(model string, cache *Cache, q Question) (key string, a Answer, done bool) {
	key = Key(model, q)
	if q.incomplete != "" {
		return key, noAnswer(key, Unaskable, "%s", q.incomplete), true
	}
	if a, ok := cache.answer(key); ok {
		return key, a, true
	}
	return key, Answer{}, false
}

// Mode is --oracle: who answers.
type Mode string

// The modes.
const (
	ModeJev    Mode = "jev"    // the model over the OpenAI-compatible protocol, through the cache
	ModeReplay Mode = "replay" // the cache only
	ModeMock   Mode = "mock"   // the fixed rule of Mock, no network
)

// DefaultMode is --oracle's default (the manual: "jev (the default)").
const DefaultMode = ModeJev

// ParseMode reads --oracle's value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeJev, ModeReplay, ModeMock:
		return m, nil
	}
	return "", fmt.Errorf("unknown oracle %q: want jev, replay or mock", s)
}

// Config says how to build an Oracle (New). The zero value of every field
// but Mode and Model has a use.
type Config struct {
	// Mode picks the oracle; "" is DefaultMode.
	Mode Mode
	// URL is jev's base URL (--oracle-url), such as
	// http://127.0.0.1:8000/v1; "/chat/completions" is appended unless it
	// ends so already. "" reads HOIST_ORACLE_URL.
	URL string
	// Model is the model's name (--oracle-model). It is part of every
	// question's key, so replay and mock need the one jev was given to
	// find its answers.
	Model string
	// Cache keeps the answers; nil keeps none (and replay answers
	// nothing).
	Cache *Cache
	// Timeout bounds each request to the model; 0 is DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a 429 or 5xx answer is tried again; 0 is
	// DefaultRetries, a negative number none.
	Retries int
	// MaxWait is the longest wait between tries, Retry-After included:
	// a server that asks for longer gets no retry. 0 is DefaultMaxWait.
	MaxWait time.Duration
	// Client sends the requests; nil is a client of http.DefaultTransport.
	// Redirects are refused either way, so the key goes only to URL.
	Client *http.Client
	// Getenv reads HOIST_ORACLE_URL, TYPESAFE_API_KEY and
	// TYPESAFE_API_KEY_FILE; nil is os.Getenv.
	Getenv func(string) string
	// Clock times the requests and the waits between tries; nil is the
	// real clock. Tests give their own, so that nothing waits for real.
	Clock Clock
	// Warn receives warnings (a cache entry that cannot be written); nil
	// drops them.
	Warn func(string)
}

// The defaults of Config.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 2
	DefaultMaxWait = 10 * time.Second
)

// New builds the Oracle cfg.Mode names. Only a value that is given and
// wrong is an error: a URL that is not http(s), a key file that cannot be
// read. What jev lacks (no key, no URL, no model) is not: its questions
// then go unanswered unless the cache holds them, and Jev.Unavailable says
// why, for a warning at start.
func New(cfg Config) (Oracle, error) {
	switch cfg.Mode {
	case "", ModeJev:
		return NewJev(cfg)
	case ModeReplay:
		return NewReplay(cfg.Model, cfg.Cache), nil
	case ModeMock:
		return NewMock(cfg.Model), nil
	}
	return nil, fmt.Errorf("unknown oracle %q: want jev, replay or mock", cfg.Mode)
}

func (cfg *Config) getenv(name string) string {
	if cfg.Getenv != nil {
		return cfg.Getenv(name)
	}
	return os.Getenv(name)
}

// Limit returns an Oracle that passes at most n questions to o and answers
// the rest with Why Spent: a session's --flow-questions or
// --confirm-questions. Every question counts, answered from the cache or
// not, so that a replay over the cache spends the budget where the live
// session did and decides the same way. A question that is Unaskable is
// answered so without counting. n of 0 or less asks none.
func Limit(o Oracle, n int) *Limited {
	return &Limited{o: o, n: int64(n)}
}

// Limited is an Oracle with a budget of questions (Limit). It is safe for
// concurrent use.
type Limited struct {
	o     Oracle
	n     int64
	asked atomic.Int64
}

var _ Oracle = (*Limited)(nil)

// Ask passes q on while the budget lasts.
func (l *Limited) Ask(ctx context.Context, q Question) Answer {
	if q.incomplete != "" {
		return l.o.Ask(ctx, q)
	}
	if l.asked.Add(1) > l.n {
		l.asked.Add(-1)
		return noAnswer(l.Key(q), Spent, "the session's %d questions are spent", l.n)
	}
	return l.o.Ask(ctx, q)
}

// Key returns the key the oracle behind l gives q ("" when it keys
// nothing).
func (l *Limited) Key(q Question) string {
	if k, ok := l.o.(keyer); ok {
		return k.Key(q)
	}
	return ""
}

// keyer is an Oracle that can name a question's cache entry without
// asking it: each of this package's.
type keyer interface{ Key(Question) string }

// Asked returns how many questions were passed on.
func (l *Limited) Asked() int { return int(l.asked.Load()) }
