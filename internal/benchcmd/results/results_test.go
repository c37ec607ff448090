package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdd(t *testing.T) {
	t.Setenv(Env, "")
	if err := Add(Row{Table: "t", Row: "r", Better: Higher}); err != nil {
		t.Fatalf("without %s: %v", Env, err)
	}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	t.Setenv(Env, path)
	if err := Add(Row{Table: "t", Row: "a", Value: 2, Unit: "s", Target: 1, Better: Lower, Load: 1.5, At: "2026-12-04 18:00"}); err != nil {
		t.Fatal(err)
	}
	if err := Add(Row{Table: "t", Row: "b", Value: 1, Unit: "s", Better: "up"}); err == nil || !strings.Contains(err.Error(), `better is "up"`) {
		t.Errorf("a row with no direction: %v", err)
	}
	b, _ := os.ReadFile(path)
	if got, want := string(b), `{"table":"t","row":"a","value":2,"unit":"s","target":1,"better":"lower","load":1.5,"at":"2026-12-04 18:00"}`+"\n"; got != want {
		t.Errorf("the file:\n%s\nwant\n%s", got, want)
	}
	if (Row{Value: 2, Target: 1, Better: Lower}).Met() || !(Row{Value: 2, Target: 1, Better: Higher}).Met() || !(Row{Value: 2}).Met() {
		t.Error("Met")
	}
}
