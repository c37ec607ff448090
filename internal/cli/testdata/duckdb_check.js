// Reads a hoist Parquet export back with DuckDB, as a notebook would, and
// prints what the e2e test compares with the store: each dataset's row
// count, calls joined to sessions per domain, and the schema version in the
// files' metadata; and, when the export holds the flow logs' datasets, runs
// joined to sessions per domain, decisions joined to their runs, and their
// column types.
//
// usage: node duckdb_check.js <peers/node_modules> <export dir>
const fs = require('fs');
const path = require('path');
const duckdb = require(path.join(process.argv[2], '@duckdb', 'node-api'));
const dir = process.argv[3];

(async () => {
  const db = await duckdb.DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
  const ds = (name) => `read_parquet('${path.join(dir, name)}/**/*.parquet', hive_partitioning = true)`;
  const out = { rows: {} };
  for (const name of ['sessions', 'turns', 'calls', 'messages']) {
    out.rows[name] = Number((await q(`SELECT count(*) AS n FROM ${ds(name)}`))[0].n);
  }
  out.calls_by_domain = {};
  for (const r of await q(`SELECT coalesce(s.domain, '') AS domain, count(*) AS n
      FROM ${ds('calls')} c JOIN ${ds('sessions')} s USING (session_id) GROUP BY 1 ORDER BY 1`)) {
    out.calls_by_domain[r.domain] = Number(r.n);
  }
  out.types = {};
  for (const r of await q(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${ds('calls')})`)) {
    out.types[r.column_name] = r.column_type;
  }
  if (fs.existsSync(path.join(dir, 'decisions')) && fs.existsSync(path.join(dir, 'runs'))) {
    for (const name of ['decisions', 'runs']) {
      out.rows[name] = Number((await q(`SELECT count(*) AS n FROM ${ds(name)}`))[0].n);
    }
    out.runs_by_domain = {};
    for (const r of await q(`SELECT coalesce(s.domain, '') AS domain, count(*) AS n
        FROM ${ds('runs')} r JOIN ${ds('sessions')} s USING (session_id) GROUP BY 1 ORDER BY 1`)) {
      out.runs_by_domain[r.domain] = Number(r.n);
    }
    out.decisions_in_runs = Number((await q(`SELECT count(*) AS n
        FROM ${ds('decisions')} d JOIN ${ds('runs')} r USING (session_id, server, run_index)`))[0].n);
    out.lookups_taken = Number((await q(`SELECT count(*) AS n FROM ${ds('decisions')} WHERE taken >= 0 AND taken_tool IS NOT NULL`))[0].n);
    for (const name of ['decisions', 'runs']) {
      for (const r of await q(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${ds(name)})`)) {
        out.types[name + '.' + r.column_name] = r.column_type;
      }
    }
  }
  out.schema_versions = (await q(`SELECT DISTINCT value::VARCHAR AS v FROM parquet_kv_metadata('${path.join(dir, 'sessions')}/**/*.parquet')
      WHERE key::VARCHAR = 'hoist.schema_version'`)).map((r) => r.v);
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
