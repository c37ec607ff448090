package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// Tau2Options tune an ingest of τ²-bench results files.
type Tau2Options struct {
	Options
	// Kinds gives the tools their kinds (a --tools manifest). Without it,
	// the kinds come from the tools/list of the domain's recorded sessions
	// in the store, when there are any; else tools are generic.
	Kinds episode.ToolKinds
	// Schemas gives the tools their input contracts (a tools.json
	// manifest); without it, they come from the domain's recorded
	// sessions, as the kinds do.
	Schemas episode.ToolSchemas
}

// Tau2 ingests τ²-bench results files: each simulation becomes an episode
// with its exact turns (issue 3, point 3). A file already ingested and
// unchanged is skipped; each file is written in one transaction.
func Tau2(ctx context.Context, db *store.DB, files []string, opt Tau2Options) (Stats, error) {
	var st Stats
	kinds, schemas := opt.Kinds, opt.Schemas
	if kinds == nil || schemas == nil {
		k, s, err := db.ListedTools(ctx)
		if err != nil {
			return st, err
		}
		if kinds == nil {
			kinds = episode.ToolKinds(k)
		}
		if schemas == nil {
			schemas = episode.ToolSchemas(s)
		}
	}
	p := progress{total: len(files), fn: opt.Progress}
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		path, err := filepath.Abs(name)
		if err != nil {
			return st, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return st, fmt.Errorf("reading τ²-bench results: %w", err)
		}
		st.Files++
		stored, err := db.Files(ctx, filepath.Dir(path))
		if err != nil {
			return st, err
		}
		sum, err := hashFile(path)
		if err != nil {
			return st, fmt.Errorf("reading τ²-bench results: %w", err)
		}
		if s, ok := stored[path]; ok && s.Size == fi.Size() && s.SHA256 == sum && s.Status == store.StatusIngested {
			st.Unchanged++
			p.add(1, 0, 0)
			continue
		}
		eps, err := episode.ReadTau2File(path, episode.Tau2Options{Kinds: kinds, Schemas: schemas})
		if err != nil {
			return st, err
		}
		st.Read++
		st.Bytes += fi.Size()
		var lines int64
		for _, ep := range eps {
			lines += int64(len(ep.Events))
		}
		st.Lines += lines
		unit := store.Unit{Episodes: eps, Files: []store.LogFile{{
			Path: path, Dir: filepath.Dir(path), Size: fi.Size(), MtimeUnixNS: fi.ModTime().UnixNano(), SHA256: sum,
			Status: store.StatusIngested, Message: "τ²-bench results", Lines: lines,
		}}}
		wrote, err := db.Put(ctx, unit)
		if err != nil {
			return st, fmt.Errorf("storing the simulations of %s: %w", name, err)
		}
		if wrote {
			st.Sessions += len(eps)
		}
		p.add(1, lines, fi.Size())
	}
	return st, nil
}
