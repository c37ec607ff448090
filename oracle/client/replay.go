package client

import (
	"context"

	"github.com/hoist-mcp/hoist/oracle"
)

// Replay answers from the cache only (--oracle replay): what jev, or
// another process, cached for the same question of the same model. A miss
// is no answer, with Why Miss. It needs no key and makes no request, so a
// rerun, hoist confirm and hoist promote decide as the live run did.
type Replay struct {
	model string
	cache *Cache
}

var _ oracle.Oracle = (*Replay)(nil)

// NewReplay returns the replay oracle over cache, for the answers of
// model (the --oracle-model the answers were asked of).
func NewReplay(model string, cache *Cache) *Replay { return &Replay{model: model, cache: cache} }

// Key returns q's cache key (oracle.Key with replay's model).
func (r *Replay) Key(q oracle.Question) string { return oracle.Key(r.model, q) }

// Ask answers q from the cache.
func (r *Replay) Ask(_ context.Context, q oracle.Question) oracle.Answer {
	key, a, done := settled(r.model, r.cache, q)
	if done {
		return a
	}
	if r.cache == nil {
		return noAnswer(key, oracle.Miss, "not in the cache (no --oracle-cache)")
	}
	return noAnswer(key, oracle.Miss, "not in the cache %s", r.cache.Dir())
}
