package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
)

// FlowEpisodes yields only the episodes that have decisions, with their
// flow logs, and honours the filter.
func TestFlowEpisodes(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 8, 20, 47, 51, 0, time.UTC)
	fl := sampleFlow()
	u := Unit{Episodes: []*episode.Episode{sample("s1", start), sample("s2", start.Add(time.Minute))}, Flows: map[string]*Flow{"s1": fl}}
	if _, err := db.Put(ctx, u); err != nil {
		t.Fatal(err)
	}
	var ids []string
	err := db.FlowEpisodes(ctx, episode.Filter{}, func(ep *episode.Episode, got *Flow) error {
		ids = append(ids, ep.ID)
		if diff := cmp.Diff(fl, got); diff != "" {
			t.Errorf("flow of %s (-put +got):\n%s", ep.ID, diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s1"}, ids); diff != "" {
		t.Errorf("episodes with decisions (-want +got):\n%s", diff)
	}
	n := 0
	if err := db.FlowEpisodes(ctx, episode.Filter{Domain: "no-such-domain"}, func(*episode.Episode, *Flow) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("filtered: %d episodes, %v", n, err)
	}
}
