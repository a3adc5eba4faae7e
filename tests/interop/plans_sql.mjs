// SPDX-License-Identifier: Apache-2.0
// Writes the TPC-H SQL rewritten the way Spark's plan-stability harness
// rewrote the shared plans: it renumbered `#N` ids in order of first
// appearance, literal text included, so q16's 'Brand#45' is printed as
// Brand#9 (Brand#10 in 3.3.0), q17's 'Brand#23' as Brand#7 and q19's
// 'Brand#12', 'Brand#23', 'Brand#34' as Brand#11, Brand#12, Brand#13
// (../shared/spark-plans/README.md, "Caveats"). A plan filters on the
// renumbered literal, so DuckDB must run the query with the same literal for
// the results to be comparable. The mapping is checked against the plan text:
// every rewritten literal must occur in the plan, or this exits 1.
//
// usage: node plans_sql.mjs QUERY_DIR PLAN_DIR OUT_DIR
// Prints one line per rewritten query: "qN: 'Brand#45' -> 'Brand#9'".
import fs from 'node:fs';
import path from 'node:path';

const [queryDir, planDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node plans_sql.mjs QUERY_DIR PLAN_DIR OUT_DIR');
  process.exit(2);
}
const version = path.basename(planDir);
const MAP = {
  16: { 'Brand#45': version === 'spark-3.3.0' ? 'Brand#10' : 'Brand#9' },
  17: { 'Brand#23': 'Brand#7' },
  19: { 'Brand#12': 'Brand#11', 'Brand#23': 'Brand#12', 'Brand#34': 'Brand#13' },
};
fs.mkdirSync(outDir, { recursive: true });
let bad = 0;
for (const f of fs.readdirSync(queryDir).filter((f) => /^q\d+\.sql$/.test(f))) {
  const q = Number(f.slice(1, -4));
  let sql = fs.readFileSync(path.join(queryDir, f), 'utf8');
  const m = MAP[q];
  if (m) {
    // one pass, so 'Brand#12' -> 'Brand#11' and 'Brand#23' -> 'Brand#12' do not chain
    sql = sql.replace(/'Brand#\d+'/g, (lit) => {
      const v = lit.slice(1, -1);
      return m[v] ? `'${m[v]}'` : lit;
    });
    const planFile = path.join(planDir, `q${q}.txt`);
    const plan = fs.existsSync(planFile) ? fs.readFileSync(planFile, 'utf8') : '';
    for (const [from, to] of Object.entries(m)) {
      const found = new RegExp(`${to}(?![0-9])`).test(plan);
      if (!found) bad++;
      console.log(`q${q}: '${from}' -> '${to}'${found ? '' : `  (NOT in ${planFile})`}`);
    }
  }
  fs.writeFileSync(path.join(outDir, f), sql);
}
process.exit(bad ? 1 : 0);
