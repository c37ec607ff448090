package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
)

// A run's figures become a page with one chart per table: bars for a
// table of rows, lines over the scale for a table whose rows have one,
// each chart well-formed SVG, and the page's table says which figure
// missed its target.
func TestDrawsEachTable(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "results.jsonl")
	t.Setenv(results.Env, res)
	if err := results.Add(
		results.Row{Table: "calls/s: hoist / cat", Series: "16 B", Row: "16 B, 1 in flight", Scale: 1, Value: 1.02, Lo: 0.98, Hi: 1.05, Unit: "×", Target: 1, Better: results.Higher},
		results.Row{Table: "calls/s: hoist / cat", Series: "16 B", Row: "16 B, 64 in flight", Scale: 64, Value: 0.91, Unit: "×", Target: 1, Better: results.Higher},
		results.Row{Table: "calls/s: hoist / cat", Series: "64 KiB", Row: "64 KiB, 1 in flight", Scale: 1, Value: 1.1, Unit: "×", Target: 1, Better: results.Higher},
		results.Row{Table: "calls/s: hoist / cat", Series: "64 KiB", Row: "64 KiB, 64 in flight", Scale: 64, Value: 1.2, Unit: "×", Target: 1, Better: results.Higher},
		results.Row{Table: "Parquet export: rows/s", Row: "generated", Value: 312450, Unit: "rows/s", Target: 500e3, Better: results.Higher},
		results.Row{Table: "Parquet export: rows/s", Row: "tau2/logs", Value: 520000, Unit: "rows/s", Target: 500e3, Better: results.Higher},
	); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "docs", "bench.md")
	img := filepath.Join(dir, "docs", "img", "bench")
	var stderr bytes.Buffer
	if code := run([]string{"-results", res, "-out", out, "-img", img}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"![calls/s: hoist / cat](img/bench/calls-s-hoist-cat.svg)",
		"| 16 B, 64 in flight | 0.91× |  | ≥ 1.00× | **missed** |",
		"| 16 B, 1 in flight | 1.02× | 0.98× – 1.05× | ≥ 1.00× | met |",
		"| generated | 312,450 rows/s |  | ≥ 500,000 rows/s | **missed** |",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page has no %q:\n%s", want, page)
		}
	}
	counts := func(name string) map[string]int {
		f, err := os.Open(filepath.Join(img, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n := map[string]int{}
		d := xml.NewDecoder(f)
		for {
			tok, err := d.Token()
			if err == io.EOF {
				return n
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				n[se.Name.Local]++
			}
		}
	}
	if n := counts("calls-s-hoist-cat.svg"); n["polyline"] != 2 || n["circle"] != 4 {
		t.Errorf("the scale chart: %d lines and %d points, want 2 and 4", n["polyline"], n["circle"])
	}
	if n := counts("parquet-export-rows-s.svg"); n["rect"] != 1+2 || n["line"] != 1 {
		t.Errorf("the bar chart: %d rects (background and bars) and %d lines (the target), want 3 and 1", n["rect"], n["line"])
	}
}

// A bad line of the results file is named by file and line.
func TestBadResultsLine(t *testing.T) {
	res := filepath.Join(t.TempDir(), "results.jsonl")
	os.WriteFile(res, []byte(`{"table":"a","row":"x","value":1,"unit":"s","better":"lower"}`+"\n{\"table\":\n"), 0o644)
	var stderr bytes.Buffer
	if code := run([]string{"-results", res, "-out", filepath.Join(t.TempDir(), "b.md")}, &stderr); code != 2 || !strings.Contains(stderr.String(), "results.jsonl:2:") {
		t.Errorf("exit %d, %q: want 2 and the file:line", code, stderr.String())
	}
}

// A partial run's tables replace the same tables of the results file,
// whole, in their place; the other tables stay, and the file is rewritten.
func TestUpdateReplacesTables(t *testing.T) {
	dir := t.TempDir()
	res, upd := filepath.Join(dir, "results.jsonl"), filepath.Join(dir, "update.jsonl")
	line := func(table, row string, v float64, at string) string {
		return `{"table":"` + table + `","row":"` + row + `","value":` + strconv.FormatFloat(v, 'f', -1, 64) + `,"unit":"s","better":"lower","at":"` + at + `","load":2}` + "\n"
	}
	os.WriteFile(res, []byte(line("a", "x", 1, "2026-01-01 10:00")+line("a", "y", 2, "2026-01-01 10:00")+line("b", "z", 3, "2026-01-01 10:05")), 0o644)
	os.WriteFile(upd, []byte(line("a", "x", 9, "2026-02-02 11:00")+line("c", "w", 4, "2026-02-02 11:01")), 0o644)
	out := filepath.Join(dir, "bench.md")
	var stderr bytes.Buffer
	if code := run([]string{"-results", res, "-update", upd, "-out", out, "-img", filepath.Join(dir, "img")}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rows, err := read(res)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Table+"/"+r.Row+"="+strconv.FormatFloat(r.Value, 'f', -1, 64))
	}
	if want := "a/x=9 b/z=3 c/w=4"; strings.Join(got, " ") != want {
		t.Errorf("rewritten results: %v, want %s", got, want)
	}
	page, _ := os.ReadFile(out)
	for _, want := range []string{"*Measured 2026-02-02 11:00 UTC, load average 2.0.*", "*Measured 2026-01-01 10:05 UTC"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page has no %q:\n%s", want, page)
		}
	}
}
