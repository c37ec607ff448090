package store

import (
	"context"

	"github.com/hoist-mcp/hoist/episode"
)

// EpisodesWithFlows streams the episodes f selects, in start order, each
// with what its flow logs hold (decisions and runs, in log order), from one
// snapshot of the store: what hoist promote scores.
func (db *DB) EpisodesWithFlows(ctx context.Context, f episode.Filter, fn func(*episode.Episode, *Flow) error) error {
	return db.episodesWithFlows(ctx, f, false, fn)
}

// episodesWithFlows streams the episodes f selects with their flow logs;
// onlyLogged keeps only those with at least one logged decision.
func (db *DB) episodesWithFlows(ctx context.Context, f episode.Filter, onlyLogged bool, fn func(*episode.Episode, *Flow) error) error {
	w, args := where(f)
	if onlyLogged {
		if w == "" {
			w = " WHERE "
		} else {
			w += " AND "
		}
		w += "e.n_decisions > 0"
	}
	return db.stream(ctx, w, args, true, func(ep *episode.Episode, _ Session, fl *Flow) error { return fn(ep, fl) })
}
