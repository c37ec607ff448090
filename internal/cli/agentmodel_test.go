package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// agent_model is null when no one said which model drove the agent, never
// "" (issue 24, point 5): a session whose log header has "agent_model":
// null lists it as null, from the logs and from the store alike, beside one
// whose header names its model.
func TestAgentModelNullWhenUnknown(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("sessions", "support"), logs)
	for _, args := range [][]string{
		{"sessions", "--sessions", logs, "--store", filepath.Join(dir, "s.db"), "--json"},
		{"sessions", "--store", filepath.Join(dir, "s.db"), "--json"},
	} {
		r := mustRun(t, args...)
		var rows []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r.stdout)
		}
		got := map[string]string{}
		for _, row := range rows {
			var id string
			json.Unmarshal(row["id"], &id)
			got[id] = string(row["agent_model"])
		}
		want := map[string]string{"20260923T212000.000Z-101": "null", "20260923T213000.000Z-103": `"some-model"`}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%v: session %s has agent_model %s, want %s", args, id, got[id], w)
			}
		}
	}
}
