package logs_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/beam/logs"
)

// TestPlan: a host session's logs that overlap in time (transitively) are
// one unit, a later one of the same host session another, a log without a
// host session alone; one unit of several logs qualifies the directory's
// tools; each log's .meta.json goes with it; units come in path order.
func TestPlan(t *testing.T) {
	dir := "gs://logs/day"
	files := []logs.File{
		{Path: dir + "/c.jsonl", HostSession: "hs-1", Start: 200, End: 300},
		{Path: dir + "/b.jsonl.zst", HostSession: "hs-1", Start: 50, End: 150},
		{Path: dir + "/a.jsonl", HostSession: "hs-1", Start: 0, End: 100},
		{Path: dir + "/d.jsonl", Start: 0, End: 400},
		{Path: dir + "/e.jsonl", HostSession: "hs-2", Start: 10, End: 20},
	}
	got := logs.Plan(dir, files, []string{dir + "/b.meta.json", dir + "/d.meta.json"})
	want := []logs.Unit{
		{Dir: dir, Paths: []string{dir + "/a.jsonl", dir + "/b.jsonl.zst"}, Metas: []string{"", dir + "/b.meta.json"}, Qualified: true},
		{Dir: dir, Paths: []string{dir + "/c.jsonl"}, Metas: []string{""}, Qualified: true},
		{Dir: dir, Paths: []string{dir + "/d.jsonl"}, Metas: []string{dir + "/d.meta.json"}, Qualified: true},
		{Dir: dir, Paths: []string{dir + "/e.jsonl"}, Metas: []string{""}, Qualified: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Plan (-want +got):\n%s", diff)
	}
	if got := logs.Plan(dir, files[3:], nil); got[0].Qualified || got[1].Qualified {
		t.Errorf("a directory of one-log sessions qualified its tools: %+v", got)
	}
	for path, want := range map[string]string{
		"gs://b/x/s.jsonl": logs.KindLog, "s.jsonl.zst": logs.KindLog, "s.meta.json": logs.KindMeta, "s.context.jsonl": logs.KindOwn,
		"s.flow.jsonl": logs.KindOwn, "hoist.db": logs.KindOwn, ".hidden.jsonl": logs.KindOwn, "notes.txt": logs.KindOther,
	} {
		if got := logs.Kind(path); got != want {
			t.Errorf("Kind(%q) = %s, want %s", path, got, want)
		}
	}
}
