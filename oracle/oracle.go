package oracle

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Oracle answers yes/no questions with the probability of a yes.
//
// Ask never fails: a question it cannot answer gets an Answer with
// Answered false and the reason, which its callers treat as no opinion
// (the manual: "A judge that cannot answer refuses nothing"). An Ask that
// waits (jev's) stops when ctx is done, with Why set to Canceled. Every
// implementation (Limited here, jev, replay and mock in oracle/client) is
// safe for concurrent use by any number of goroutines.
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

// DefaultTimeout is how long one question may take when its asker says
// nothing: each request jev sends (oracle/client's Config.Timeout), and
// the wait for a flow decision's questions.
const DefaultTimeout = 10 * time.Second

// Answers holds answers by their question's key, without asking: the
// answer cache (oracle/client's Cache), as flow.Reanswer reads it. A
// cached answer has Answered and Cached set.
type Answers interface {
	Answer(key string) (Answer, bool)
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
// asking it: each of oracle/client's.
type keyer interface{ Key(Question) string }

// Asked returns how many questions were passed on.
func (l *Limited) Asked() int { return int(l.asked.Load()) }
