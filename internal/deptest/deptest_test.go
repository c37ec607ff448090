package deptest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/hoist-mcp/hoist"

// cli are the command-line packages: the only ones that parse flags.
var cli = []string{"internal/cli", "internal/mcpcli", "internal/proccli", "internal/democli", "internal/cmdutil", "internal/oraclecli"}

// pure are the packages that reach no network, even indirectly: the
// System-One model's questions (oracle), the flows and their deciders, the
// guards and the judge, what a served lookup earned, binding expressions,
// episodes, and the analysis over them. They put questions to an
// oracle.Oracle; its clients (oracle/client) are wired in by the command
// lines.
var pure = []string{"oracle", "flow", "guards", "judge", "earned", "binding", "episode", "learn", "audit", "evaluate", "promote", "drift", "active"}

// rules are hoist's import rules (DESIGN.md, "Packages" and "Dependencies").
var rules = Rules{
	Module: module,
	// For every package, the module packages it may import
	// (docs/architecture.md draws them). A new package needs its place here
	// before the test passes.
	Layers: map[string][]string{
		// Leaves.
		"jsontext":   {},
		"migrations": {},
		"stats":      {},

		// The wire and the log.
		"jsonrpc": {"jsontext"},
		"mcpmsg":  {"jsonrpc", "jsontext"},
		"binding": {"jsontext"},
		"mcplog":  {"jsonrpc", "jsontext"},

		// Episodes and the store.
		"episode": {"jsonrpc", "mcplog", "jsontext", "mcpmsg"},
		"store":   {"episode", "migrations", "mcplog", "jsontext"},
		"ingest":  {"episode", "jsonrpc", "mcplog", "store", "mcpmsg", "jsontext"},
		"export":  {"episode", "store", "internal/atomicfile"},
		"redact":  {"jsonrpc", "mcplog", "jsontext", "mcpmsg", "internal/atomicfile"},

		// Flows and what measures them; none of them reads the store.
		"flow":     {"episode", "stats", "binding", "jsontext", "mcplog", "oracle"}, // oracle: the arbiter's input asks the flow's question (oracle.Lookup) within a session's budget
		"learn":    {"episode", "flow", "stats", "binding", "jsontext", "mcpmsg"},
		"earned":   {"episode", "flow", "jsontext"}, // what a served lookup earned: one definition for every report (DESIGN.md)
		"audit":    {"earned", "episode", "flow", "stats", "oracle", "binding"},
		"promote":  {"episode", "evaluate", "flow", "stats", "oracle", "binding"}, // evaluate: the reward, one definition of what a lookup earns
		"evaluate": {"earned", "episode", "flow", "stats", "oracle", "binding", "jsontext"},
		"drift":    {"episode", "earned", "flow", "stats", "binding"}, // drift compares two flows (the CLI learns the second); it reads no store and no log
		"guards":   {"mcpmsg", "jsontext", "oracle"},
		"oracle":   {"jsontext"},                     // the model's questions (pure): prompts, parsing, cache keys; the callers turn their messages into its types
		"judge":    {"guards", "oracle", "jsontext"}, // the confirmation judge: the guards' confirmations put to the oracle; jsontext: the canonical JSON of an approval's digest

		// Who asks the oracle's questions: jev over HTTP, replay and mock,
		// and the answer cache. Only the command lines wire them in.
		"oracle/client": {"oracle", "jsontext", "internal/atomicfile"},

		// The local web page over sessions, flows and savings: it reads
		// through the toolkit's packages and judges nothing itself.
		"console":      {"audit", "earned", "episode", "flow", "mcplog", "mcpmsg", "store", "console/hold", "internal/httpguard"},
		"console/hold": {"jsontext", "mcpmsg"}, // the console's side of a held frame: pure logic

		// The proxy and the scripted client.
		"proxy": {"active", "episode", "flow", "jsonrpc", "mcplog", "guards", "judge", "oracle", "jsontext", "mcpmsg", "console/hold", "telemetry"}, // episode: the tool types flow.Session.Listed takes; console/hold: the rules of a frame held for --console
		// The active mode's state machine: no I/O of its own (TestActiveDoesNoIO);
		// mcplog only for the side logs' line types, which it hands the proxy to write.
		"active":    {"episode", "flow", "guards", "judge", "jsonrpc", "jsontext", "mcplog", "mcpmsg", "oracle", "toolpin"},
		"procedure": {"jsonrpc", "mcplog", "jsontext", "mcpmsg", "binding", "episode"},
		// --otel: spans and metrics of what the proxy forwards; its one
		// network use is the OTLP exporter's.
		"telemetry": {"jsonrpc", "jsontext", "mcpmsg"},

		// Recordings read back: served as a server (hoist-mcp-demo
		// --replay) and compared (hoist diff); tool definitions pinned and
		// compared, by hoist tools and by the proxy (--pin-tools).
		"recording": {"jsonrpc", "jsontext", "mcplog", "mcpmsg", "toolpin"},
		"toolpin":   {"jsontext", "mcpmsg"},

		// Command lines; internal/cli is every toolkit package but never
		// the proxy, internal/mcpcli the proxy but no toolkit.
		"internal/cli": {"audit", "console", "drift", "earned", "episode", "evaluate", "export", "flow", "guards", "ingest", "learn", "procedure", "promote", "recording", "redact", "store", "toolpin",
			"judge", "oracle", "oracle/client", "internal/oraclecli", "internal/atomicfile", "internal/buildinfo", "internal/cmdutil", "internal/iostreams"},
		"internal/mcpcli":     {"flow", "guards", "judge", "oracle", "oracle/client", "mcplog", "proxy", "telemetry", "toolpin", "internal/buildinfo", "internal/cmdutil", "internal/iostreams", "internal/oraclecli"},
		"internal/proccli":    {"episode", "procedure", "internal/buildinfo", "internal/cmdutil", "internal/iostreams"},
		"internal/democli":    {"internal/buildinfo", "internal/cmdutil", "internal/demo", "internal/iostreams", "recording"},
		"internal/cmdutil":    {"internal/buildinfo"},
		"internal/oraclecli":  {"oracle", "oracle/client"}, // the oracle's flags, shared by hoist and hoist-mcp
		"cmd/hoist":           {"internal/cli", "internal/iostreams"},
		"cmd/hoist-mcp":       {"internal/mcpcli", "internal/iostreams"},
		"cmd/hoist-procedure": {"internal/proccli", "internal/iostreams"},
		"cmd/hoist-mcp-demo":  {"internal/democli", "internal/iostreams"},

		// Plumbing.
		"internal/atomicfile": {},
		"internal/buildinfo":  {},
		"internal/demo":       {"jsontext", "mcpmsg"}, // mcpmsg: the protocol's eras, which the demo speaks all of
		"internal/iostreams":  {},
		"internal/httpguard":  {}, // who may connect to a local HTTP service (--listen's rule)
		"internal/testbin":    {}, // imports testing: only tests may import it
		"internal/deptest":    {},
		"internal/e2e":        {}, // tests only
		"internal/doccheck":   {}, // tests only: the documents' links and citations
		"internal/oracletest": {}, // tests only: the fake model server (imports httptest)

		// Benchmark programs (scripts/bench.sh).
		"internal/benchcmd/auditbench":  {"audit", "episode", "flow", "learn", "store"},
		"internal/benchcmd/evalbench":   {"episode", "evaluate", "flow", "store", "internal/cli", "internal/iostreams"},
		"internal/benchcmd/benchdoc":    {"internal/atomicfile", "internal/benchcmd/results"}, // draws a run's figures
		"internal/benchcmd/flowbench":   {"audit", "episode", "flow", "ingest", "learn", "store", "binding", "jsontext", "internal/benchcmd/results"},
		"internal/benchcmd/hoistprof":   {"internal/mcpcli", "internal/iostreams"},
		"internal/benchcmd/gobench":     {"internal/benchcmd/results"}, // a go test benchmark's metric as a figure
		"internal/benchcmd/httpbench":   {"internal/benchcmd/turns", "internal/benchcmd/results"},
		"internal/benchcmd/ingestbench": {"mcplog", "internal/benchcmd/results"},
		"internal/benchcmd/proxybench":  {"mcplog", "internal/benchcmd/turns"},
		"internal/benchcmd/redactbench": {"redact"},
		"internal/benchcmd/replaybench": {"audit", "internal/cli"},
		"internal/benchcmd/results":     {},                            // a run's figures as JSON lines
		"internal/benchcmd/turns":       {"internal/benchcmd/results"}, // a program against its baseline, in turns
	},
	Modules: []Module{
		{"github.com/mattn/go-sqlite3", []string{"store"}, "the store is the one place that talks SQL"},
		{"github.com/jmoiron/sqlx", []string{"store"}, "the store is the one place that talks SQL"},
		{"github.com/apache/arrow-go/v18", []string{"export"}, "Parquet and Arrow IPC stay in export"},
		{"github.com/klauspost/compress", []string{"mcplog", "internal/demo"}, "zstd: mcplog reads and writes .jsonl.zst logs, and everything else reads logs through it; the demo decompresses the database it carries"},
		{"github.com/schollz/progressbar/v3", []string{"internal/cli"}, "progress on a terminal is the toolkit's command line's business"},
		{"golang.org/x/sync", []string{"ingest"}, "errgroup: ingest's bounded fan-out over many files"},
		{"golang.org/x/time", []string{"active"}, "rate: the token buckets of the proxy's --limit, read on the state machine's clock"},
		{"github.com/spf13/cobra", cli, "only the command lines parse flags"},
		{"github.com/spf13/pflag", cli, "cobra's flags; only the command lines parse flags"},
		{"github.com/google/go-cmp", nil, "test diffs"},
		{"go.uber.org/goleak", nil, "goroutine leak checks on the proxy's session-end paths"},
		{"github.com/chromedp/chromedp", nil, "a real browser (Chromium over its DevTools protocol) for the console's tests"},
		{"github.com/chromedp/cdproto", nil, "the DevTools protocol's types (frames, layout boxes) that the console's browser tests read"},
		{"github.com/go-logr/logr", []string{"telemetry"}, "OpenTelemetry's logger, silenced: what it logs may hold the export headers"},
		{"go.opentelemetry.io/otel", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/metric", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/trace", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/sdk", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/sdk/metric", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp", []string{"telemetry"}, "OpenTelemetry stays in telemetry: the proxy hands it lines, and it alone knows spans and exporters"},
		{"github.com/modelcontextprotocol/go-sdk", nil, "the forwarding path never re-encodes; the go-sdk is a real client and server for tests"},
	},
	Unlinked: Unlinked{
		Packages: []string{"testing/...", "net/http/httptest"},
		Why:      "test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
		Except: map[string]string{
			// logger.go has TestLogger(testing.TB). arrow-go's Parquet
			// metadata is thrift, so hoist links it; linking testing
			// registers no flags (only testing.Init does).
			"github.com/apache/thrift/lib/go/thrift": "thrift's TestLogger, reached through arrow-go's Parquet",
		},
	},
	NotDeps: []NotDep{
		{[]string{"internal/cli", "cmd/hoist"}, module + "/proxy", "the toolkit reads what the proxy wrote only through mcplog and episode"},
		{[]string{"learn", "promote", "evaluate", "audit", "drift", "flow", "earned"}, module + "/store", "analysis code reads episodes through episode.Source, never the store"},
		{[]string{"cmd/hoist-mcp", "cmd/hoist-procedure", "cmd/hoist-mcp-demo"}, "github.com/mattn/go-sqlite3", "only hoist carries SQLite"},
		{[]string{"cmd/hoist-mcp", "cmd/hoist-procedure", "cmd/hoist-mcp-demo"}, "github.com/apache/arrow-go/...", "only hoist carries Arrow"},
		{[]string{"cmd/hoist-mcp"}, "github.com/schollz/progressbar/...", "the proxy draws no progress bars"},
		{pure, "net/http/...", "the model's questions, the flows, the guards and what reads episodes are pure; the clients that ask over HTTP live in oracle/client (DESIGN.md, Packages)"},
	},
}

func TestImports(t *testing.T) {
	pkgs, err := List(".", module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	var ours int
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, module) {
			ours++
		}
	}
	if ours < len(rules.Layers)/2 {
		t.Fatalf("go list found %d of the module's packages", ours)
	}
	for _, p := range rules.Check(pkgs) {
		t.Error(p)
	}
}

// TestActiveDoesNoIO keeps the active mode's state machine free of I/O
// (DESIGN.md, "Active mode: one state machine"): its own files import no
// file, process, network or clock-driven package; the proxy carries out
// its actions.
func TestActiveDoesNoIO(t *testing.T) {
	pkgs, err := List(".", module+"/active")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"os", "os/exec", "os/signal", "io", "io/fs", "io/ioutil", "net", "net/http", "syscall", "bufio"}
	found := false
	for _, p := range pkgs {
		if p.ImportPath != module+"/active" {
			continue
		}
		found = true
		for _, imp := range p.Imports {
			if slices.Contains(forbidden, imp) || strings.HasPrefix(imp, "net/") {
				t.Errorf("active imports %s: the state machine does no I/O; the proxy carries out its actions", imp)
			}
		}
	}
	if !found {
		t.Fatal("go list did not find the active package")
	}
}

// TestTelemetryNetworkOnlyByExporter keeps telemetry's own files off the
// network: its one way out is the OTLP exporters it sets up, which bring
// net/http with them; the proxy's pumps call it with lines, never the
// other way round.
func TestTelemetryNetworkOnlyByExporter(t *testing.T) {
	pkgs, err := List(".", module+"/telemetry")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pkgs {
		if p.ImportPath != module+"/telemetry" {
			continue
		}
		found = true
		for _, imp := range p.Imports {
			if imp == "net" || strings.HasPrefix(imp, "net/") {
				t.Errorf("telemetry imports %s: it reaches the network only through the OTLP exporters", imp)
			}
		}
		if !slices.Contains(p.Imports, "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp") {
			t.Errorf("telemetry no longer imports the OTLP/HTTP trace exporter; update this test and docs/telemetry.md")
		}
	}
	if !found {
		t.Fatal("go list did not find the telemetry package")
	}
}

func TestEveryDirectRequirementHasOwners(t *testing.T) {
	direct, err := DirectRequires(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(direct, "github.com/spf13/cobra") {
		t.Fatalf("go.mod's direct requirements %q lack cobra", direct)
	}
	for _, p := range rules.CheckRequires(direct) {
		t.Error(p)
	}
}

// TestCheck feeds the checker made-up packages and sees each rule fire.
func TestCheck(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	clean := []Package{
		{ImportPath: m("jsonrpc"), Name: "jsonrpc", Imports: []string{"bytes", m("jsontext")}, Deps: []string{"bytes", m("jsontext")}},
		{ImportPath: m("jsontext"), Name: "jsontext", Imports: []string{"bytes"}, Deps: []string{"bytes"}},
		{ImportPath: m("store"), Name: "store", Imports: []string{m("episode"), "github.com/mattn/go-sqlite3"}},
		{ImportPath: m("cmd/hoist"), Name: "main", Imports: []string{m("internal/cli")}, Deps: []string{m("internal/cli"), "os"}},
		{ImportPath: m("internal/testbin"), Name: "testbin", Imports: []string{"testing"}, Deps: []string{"testing"}},
	}
	if got := rules.Check(clean); len(got) != 0 {
		t.Errorf("a clean list: %q", got)
	}
	for _, tc := range []struct {
		name string
		pkgs []Package
		want []string
	}{
		{"proxy imports internal/cli", []Package{
			{ImportPath: m("proxy"), Name: "proxy", Imports: []string{m("jsonrpc"), m("internal/cli")}},
		}, []string{
			"proxy imports internal/cli: proxy may import only [active episode flow jsonrpc mcplog guards judge oracle jsontext mcpmsg console/hold telemetry] (DESIGN.md, Packages)",
		}},
		{"jsonrpc imports internal/testbin", []Package{
			{ImportPath: m("jsonrpc"), Name: "jsonrpc", Imports: []string{m("internal/testbin"), m("jsontext")}},
		}, []string{
			"jsonrpc imports internal/testbin: jsonrpc may import only [jsontext] (DESIGN.md, Packages)",
		}},
		{"a program links testing", []Package{
			{ImportPath: m("cmd/hoist-mcp"), Name: "main", Imports: []string{m("internal/mcpcli")},
				Deps: []string{m("internal/mcpcli"), m("internal/testbin"), m("proxy"), "net/http/httptest", "testing", "testing/iotest"}},
			{ImportPath: m("proxy"), Name: "proxy", Imports: []string{"net/http/httptest"}},
			{ImportPath: m("internal/testbin"), Name: "testbin", Imports: []string{"testing"}},
			{ImportPath: "testing", Name: "testing", Standard: true},
		}, []string{
			"program cmd/hoist-mcp links net/http/httptest (imported by proxy): test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
			"program cmd/hoist-mcp links testing (imported by internal/testbin): test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
			"program cmd/hoist-mcp links testing/iotest: test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
		}},
		{"a program imports testing itself", []Package{
			{ImportPath: m("cmd/hoist-procedure"), Name: "main", Imports: []string{"testing"}, Deps: []string{"testing"}},
		}, []string{
			"program cmd/hoist-procedure links testing (imported by cmd/hoist-procedure): test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
		}},
		{"a program links testing through a listed exception only", []Package{
			{ImportPath: m("cmd/hoist"), Name: "main", Imports: []string{m("internal/cli")},
				Deps: []string{m("internal/cli"), "github.com/apache/thrift/lib/go/thrift", "testing"}},
			{ImportPath: "github.com/apache/thrift/lib/go/thrift", Name: "thrift", Imports: []string{"testing"}},
		}, nil},
		{"and through it and another", []Package{
			{ImportPath: m("cmd/hoist"), Name: "main", Imports: []string{m("internal/cli")},
				Deps: []string{m("internal/cli"), "github.com/apache/thrift/lib/go/thrift", "example.com/helper", "testing"}},
			{ImportPath: "github.com/apache/thrift/lib/go/thrift", Name: "thrift", Imports: []string{"testing"}},
			{ImportPath: "example.com/helper", Name: "helper", Imports: []string{"testing"}},
		}, []string{
			"program cmd/hoist links testing (imported by example.com/helper): test code in a program (internal/testbin, a test helper, or code moved out of a _test.go file)",
		}},
		{"a package without a place", []Package{
			{ImportPath: m("viewer"), Name: "viewer", Imports: []string{m("store")}},
		}, []string{
			"viewer has no entry in deptest's layers: give the new package its place (DESIGN.md, Packages)",
		}},
		{"a heavy module outside its home", []Package{
			{ImportPath: m("export"), Name: "export", Imports: []string{"github.com/mattn/go-sqlite3", "github.com/apache/arrow-go/v18/parquet/pqarrow"}},
			{ImportPath: m("learn"), Name: "learn", Imports: []string{"github.com/google/go-cmp/cmp", "golang.org/x/exp/slices"}},
		}, []string{
			"export imports github.com/mattn/go-sqlite3: github.com/mattn/go-sqlite3 is for only [store] (the store is the one place that talks SQL)",
			"learn imports github.com/google/go-cmp/cmp: github.com/google/go-cmp is for tests only (test diffs)",
			"learn imports golang.org/x/exp/slices, of a module deptest does not know: give it its owners and a reason",
		}},
		{"nothing imports cmd", []Package{
			{ImportPath: m("internal/cli"), Name: "cli", Imports: []string{m("cmd/hoist")}},
		}, []string{
			"internal/cli imports cmd/hoist: nothing imports cmd/, which only wires",
		}},
		{"a pure package reaches the network", []Package{
			{ImportPath: m("flow"), Name: "flow", Imports: []string{m("oracle")}, Deps: []string{m("oracle"), "net/http", "net/http/httptrace", "net/url"}},
			{ImportPath: m("oracle"), Name: "oracle", Imports: []string{"net/http"}, Deps: []string{"net/http", "net/http/httptrace", "net/url"}},
			{ImportPath: m("oracle/client"), Name: "client", Imports: []string{m("oracle"), "net/http"}, Deps: []string{m("oracle"), "net/http", "net/url"}},
			{ImportPath: m("binding"), Name: "binding", Imports: []string{"net/url"}, Deps: []string{"net/url"}},
		}, []string{
			"flow depends on net/http (imported by oracle): the model's questions, the flows, the guards and what reads episodes are pure; the clients that ask over HTTP live in oracle/client (DESIGN.md, Packages)",
			"oracle depends on net/http (imported by oracle): the model's questions, the flows, the guards and what reads episodes are pure; the clients that ask over HTTP live in oracle/client (DESIGN.md, Packages)",
		}},
		{"forbidden even indirectly", []Package{
			{ImportPath: m("cmd/hoist-mcp"), Name: "main", Imports: []string{m("internal/mcpcli")},
				Deps: []string{m("internal/mcpcli"), m("internal/cli"), "github.com/mattn/go-sqlite3"}},
			{ImportPath: m("internal/cli"), Name: "cli", Imports: []string{"github.com/mattn/go-sqlite3"}},
			{ImportPath: m("learn"), Name: "learn", Imports: []string{m("episode")}, Deps: []string{m("episode"), m("store")}},
			{ImportPath: m("episode"), Name: "episode", Imports: []string{m("store")}},
		}, []string{
			"cmd/hoist-mcp depends on github.com/mattn/go-sqlite3 (imported by internal/cli): only hoist carries SQLite",
			"episode imports store: episode may import only [jsonrpc mcplog jsontext mcpmsg] (DESIGN.md, Packages)",
			"internal/cli imports github.com/mattn/go-sqlite3: github.com/mattn/go-sqlite3 is for only [store] (the store is the one place that talks SQL)",
			"learn depends on github.com/hoist-mcp/hoist/store (imported by episode): analysis code reads episodes through episode.Source, never the store",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rules.Check(tc.pkgs)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{"go.mod requires golang.org/x/exp, which deptest does not list: give it its owners and a reason"},
		rules.CheckRequires([]string{"github.com/spf13/cobra", "golang.org/x/exp"})); diff != "" {
		t.Errorf("requirements (-want +got):\n%s", diff)
	}
}
