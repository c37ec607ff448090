package export

import (
	"fmt"
	"strings"
)

// Card returns the dataset card written beside an export as README.md: what
// each dataset holds, its columns and types, the partitions, and how to read
// it.
func Card(format Format, schemaVersion int, version string, res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# hoist episode export\n\n")
	fmt.Fprintf(&b, "Written by `hoist export --format %s` (hoist %s) from an episode store at schema version %d; export layout version %d.\n", format, version, schemaVersion, FormatVersion)
	fmt.Fprintf(&b, "Every file carries `hoist.schema_version`, `hoist.dataset` and `hoist.export_format` in its metadata")
	if format == JSONL {
		fmt.Fprintf(&b, " (JSON lines carry none: this card is their metadata)")
	}
	fmt.Fprintf(&b, ".\n\n")
	fmt.Fprintf(&b, "Each dataset is one directory, Hive-partitioned by the session's domain and UTC start date:\n`<dataset>/domain=<domain>/date=<YYYY-MM-DD>/part-0%s`. The partition columns `domain` and `date`\nare in the paths, not in the files; a session without a domain is in `domain=__HIVE_DEFAULT_PARTITION__` (null).\n", format.Ext())
	fmt.Fprintf(&b, "Timestamps are UTC, in milliseconds. JSON (arguments, results) is kept as strings, exactly as it was sent.\n")
	fmt.Fprintf(&b, "Column names follow OpenTelemetry's GenAI and MCP conventions where one exists: `tool_name` (gen_ai.tool.name),\n`method` (mcp.method.name), `request_id` (jsonrpc.request.id).\n\n")
	fmt.Fprintf(&b, "Join everything on `session_id`; calls to turns on (`session_id`, `turn_index`);\ndecisions to runs on (`session_id`, `server`, `run_index`).\n\n")

	written := map[string]bool{}
	for _, name := range res.Written {
		written[name] = true
	}
	fmt.Fprintf(&b, "| dataset | rows | what |\n|---|---:|---|\n")
	var absent []string
	for _, d := range datasets {
		if !written[d.Name] {
			fmt.Fprintf(&b, "| `%s` | not written | %s |\n", d.Name, d.Doc)
			absent = append(absent, "`"+d.Name+"`")
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", d.Name, res.Rows[d.Name], d.Doc)
	}
	fmt.Fprintf(&b, "\n%d partitions, %d files.\n", res.Partitions, res.Files)
	if len(absent) > 0 {
		fmt.Fprintf(&b, "\n%s not written: the store holds no rows for them. They come from flow logs: hoist-mcp --flow writes\n`<session>.flow.jsonl` beside each session log, and hoist ingest reads it with its session.\n", strings.Join(absent, " and "))
	}
	for _, d := range datasets {
		if !written[d.Name] {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| column | type | null | meaning |\n|---|---|---|---|\n", d.Name, d.Doc)
		for _, c := range d.Columns {
			null := ""
			if c.Nullable {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type, null, c.Doc)
		}
		fmt.Fprintf(&b, "| `domain` | string (partition) | yes | the session's domain |\n| `date` | date (partition) | | the session's UTC start date |\n")
	}
	fmt.Fprintf(&b, "\n## Reading it\n\n")
	switch format {
	case Parquet:
		fmt.Fprintf(&b, "```sql\n-- DuckDB\nSELECT s.domain, c.tool_name, count(*) AS calls\nFROM read_parquet('calls/**/*.parquet', hive_partitioning = true) c\nJOIN read_parquet('sessions/**/*.parquet', hive_partitioning = true) s USING (session_id)\nGROUP BY ALL ORDER BY calls DESC;\n```\n\n")
		if written["decisions"] && written["runs"] {
			fmt.Fprintf(&b, "```sql\n-- DuckDB: each run's decisions, with the call it followed\nSELECT r.session_id, r.run_index, r.call_tool, d.site, d.taken_tool, d.propensity, r.surprise\nFROM read_parquet('runs/**/*.parquet', hive_partitioning = true) r\nJOIN read_parquet('decisions/**/*.parquet', hive_partitioning = true) d USING (session_id, server, run_index)\nORDER BY r.session_id, r.run_index, d.decision_index;\n```\n\n")
		}
		fmt.Fprintf(&b, "```python\nimport pandas as pd, polars as pl\ncalls = pd.read_parquet(\"calls\")                               # pyarrow reads the partitions\ncalls = pl.scan_parquet(\"calls/**/*.parquet\", hive_partitioning=True).collect()\n# Spark: spark.read.parquet(\"calls\")\n```\n")
	case Arrow:
		fmt.Fprintf(&b, "```python\nimport pyarrow.dataset as ds\ncalls = ds.dataset(\"calls\", format=\"arrow\", partitioning=\"hive\").to_table()\n```\n\nThe files are Arrow IPC (Feather v2) with zstd-compressed buffers.\n")
	case JSONL:
		fmt.Fprintf(&b, "```sql\n-- DuckDB\nSELECT * FROM read_json('calls/**/*.jsonl', hive_partitioning = true);\n```\n\nTimestamps are RFC 3339 strings in UTC.\n")
	}
	return b.String()
}
