// Reads two Parquet exports back with DuckDB, as a notebook would, and
// prints, for each dataset, the rows of each, the rows of one that the
// other lacks (as multisets, with the partition columns domain and date),
// and whether their column types are the same.
//
// usage: node duckdb_rows.js <peers/node_modules> <export dir A> <export dir B> <dataset>...
const path = require('path');
const duckdb = require(path.join(process.argv[2], '@duckdb', 'node-api'));
const [a, b] = [process.argv[3], process.argv[4]];
const names = process.argv.slice(5);

(async () => {
  const db = await duckdb.DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
  const ds = (dir, name) => `read_parquet('${path.join(dir, name)}/**/*.parquet', hive_partitioning = true)`;
  const n = async (sql) => Number((await q(`SELECT count(*) AS n FROM (${sql})`))[0].n);
  const out = {};
  for (const name of names) {
    const [x, y] = [ds(a, name), ds(b, name)];
    const types = async (t) => JSON.stringify(await q(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${t})`));
    out[name] = {
      RowsA: await n(`SELECT * FROM ${x}`),
      RowsB: await n(`SELECT * FROM ${y}`),
      OnlyA: await n(`SELECT * FROM ${x} EXCEPT ALL SELECT * FROM ${y}`),
      OnlyB: await n(`SELECT * FROM ${y} EXCEPT ALL SELECT * FROM ${x}`),
      SameTypes: (await types(x)) === (await types(y)),
    };
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
