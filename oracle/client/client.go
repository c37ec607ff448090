package client

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/hoist-mcp/hoist/oracle"
)

// noAnswer returns the Answer of a question that gets none.
func noAnswer(key string, why oracle.Why, format string, args ...any) oracle.Answer {
	return oracle.Answer{Key: key, Why: why, Reason: fmt.Sprintf(format, args...)}
}

// settled takes the steps every mode takes first: it keys q, answers an
// Unaskable question so, and answers from cache (nil for none) when it
// holds q. done says whether a is the answer.
func settled(model string, cache *Cache, q oracle.Question) (key string, a oracle.Answer, done bool) {
	key = oracle.Key(model, q)
	if why := q.Incomplete(); why != "" {
		return key, noAnswer(key, oracle.Unaskable, "%s", why), true
	}
	if a, ok := cache.Answer(key); ok {
		return key, a, true
	}
	return key, oracle.Answer{}, false
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
	// Timeout bounds each request to the model; 0 is
	// oracle.DefaultTimeout.
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

// The defaults of Config (and oracle.DefaultTimeout).
const (
	DefaultRetries = 2
	DefaultMaxWait = 10 * time.Second
)

// New builds the Oracle cfg.Mode names. Only a value that is given and
// wrong is an error: a URL that is not http(s), a key file that cannot be
// read. What jev lacks (no key, no URL, no model) is not: its questions
// then go unanswered unless the cache holds them, and Jev.Unavailable says
// why, for a warning at start.
func New(cfg Config) (oracle.Oracle, error) {
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
