package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

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
		w += "EXISTS (SELECT 1 FROM decisions d WHERE d.episode_id = e.id)"
	}
	return db.readTx(ctx, func(tx *sqlx.Tx) error {
		var rows []sessionRow
		if err := tx.SelectContext(ctx, &rows, "SELECT "+sessionCols+" FROM episodes e"+w+" ORDER BY e.started_unix_ms, e.id", args...); err != nil {
			return fmt.Errorf("reading episodes: %w", err)
		}
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return err
			}
			ep, err := loadEpisode(ctx, tx, r)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			fl, err := loadFlow(ctx, tx, r.ID)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			if err := fn(ep, fl); err != nil {
				return err
			}
		}
		return nil
	})
}
