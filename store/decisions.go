package store

import (
	"context"

	"github.com/hoist-mcp/hoist/episode"
)

// FlowEpisodes streams the episodes f selects that have at least one
// logged decision, in start order, each with what its flow logs hold
// (decisions and runs in log order), from one snapshot of the store. It is
// what hoist evaluate reads (issue 6, point 4).
func (db *DB) FlowEpisodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode, *Flow) error) error {
	return db.episodesWithFlows(ctx, f, true, fn)
}
