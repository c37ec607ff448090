// Package deptest keeps the import directions of DESIGN.md true: each
// package imports only the layers below it, and each heavy dependency has
// exactly one home.
package deptest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hoist-mcp/hoist"

// layers lists, for each top-level package, the module packages it may
// import directly (DESIGN.md, "Packages"). Packages not listed (cmd/, the
// internal plumbing) may import any module package except as the rules
// below forbid.
var layers = map[string][]string{
	"jsontext":   {},
	"jsonrpc":    {"jsontext"},
	"migrations": {},
	"stats":      {},
	"binding":    {"jsontext"},
	"mcplog":     {"jsonrpc", "jsontext"},
	"mcpmsg":     {"jsonrpc", "jsontext"},
	"episode":    {"mcplog", "jsonrpc", "jsontext", "mcpmsg"},
	"store":      {"episode", "migrations", "mcplog", "jsonrpc", "jsontext"}, // jsontext: the flow-log columns cut from the raw line
	"ingest":     {"mcplog", "episode", "store", "jsonrpc", "jsontext"},
	"flow":       {"episode", "stats", "binding", "jsontext", "mcplog"},
	"learn":      {"episode", "flow", "stats", "binding", "jsontext"},
	"promote":    {"flow", "episode", "oracle", "stats"},
	"evaluate":   {"flow", "episode", "oracle", "stats", "jsontext"},
	"audit":      {"flow", "episode", "oracle", "stats"},
	"redact":     {"mcplog", "jsonrpc", "jsontext", "mcpmsg"},
	"drift":      {"flow", "episode", "stats"}, // drift compares two flows (the CLI learns the second); it reads no store and no log
	"export":     {"store", "episode"},
	"guards":     {"jsonrpc", "mcpmsg"},
	"oracle":     {"jsonrpc", "mcpmsg"},
	"proxy":      {"jsonrpc", "jsontext", "mcpmsg", "mcplog", "flow", "guards", "oracle", "episode"}, // episode: the tool types flow.Session.Listed takes
	"procedure":  {"jsonrpc", "jsontext", "mcpmsg", "mcplog", "binding"},
}

// homes names the only packages that may import a third-party module, and
// why.
var homes = []struct {
	prefix string
	only   []string
	why    string
}{
	{"github.com/mattn/go-sqlite3", []string{"store"}, "the store is the one place that talks SQL"},
	{"github.com/jmoiron/sqlx", []string{"store"}, "the store is the one place that talks SQL"},
	{"github.com/apache/arrow-go", []string{"export"}, "Arrow and Parquet stay in export"},
	{"github.com/spf13/cobra", []string{"internal/cli", "internal/mcpcli"}, "only the command lines parse flags"},
	{"github.com/modelcontextprotocol/go-sdk", nil, "the forwarding path never re-encodes; the go-sdk serves tests only"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

// top returns the architecture layer of a module package: its first path
// element, or internal/x for plumbing.
func top(r string) string {
	parts := strings.Split(r, "/")
	if parts[0] == "internal" && len(parts) > 1 {
		return "internal/" + parts[1]
	}
	return parts[0]
}

func TestImportDirections(t *testing.T) {
	pkgs := listPackages(t)
	for _, p := range pkgs {
		from := top(rel(p.ImportPath))
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				to := top(rel(imp))
				if to == from {
					continue
				}
				if to == "cmd" {
					t.Errorf("%s imports %s: nothing imports cmd/", p.ImportPath, imp)
				}
				if allowed, ok := layers[from]; ok && !contains(allowed, to) && !strings.HasPrefix(to, "internal/") {
					t.Errorf("%s imports %s: %s may import only %v (DESIGN.md, Packages)", p.ImportPath, imp, from, allowed)
				}
				continue
			}
			for _, h := range homes {
				if strings.HasPrefix(imp, h.prefix) && !contains(h.only, from) {
					t.Errorf("%s imports %s: only %v may (%s)", p.ImportPath, imp, h.only, h.why)
				}
			}
		}
	}
}

func TestToolkitNeverImportsProxy(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", module+"/internal/cli", module+"/cmd/hoist")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == module+"/proxy" {
			t.Errorf("the toolkit depends on %s: it reads what the proxy wrote only through mcplog and episode", dep)
		}
	}
}

func TestAnalysisReadsEpisodesNotTheStore(t *testing.T) {
	for _, p := range listPackages(t) {
		switch top(rel(p.ImportPath)) {
		case "learn", "promote", "evaluate", "audit", "flow":
		default:
			continue
		}
		out, err := exec.Command("go", "list", "-deps", p.ImportPath).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == module+"/store" {
				t.Errorf("%s depends on the store: analysis code reads episode.Source", p.ImportPath)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
