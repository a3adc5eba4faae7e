// SPDX-License-Identifier: Apache-2.0
// Markdown for a bench/spark/run.sh result folder: per query Ember's and
// vanilla Spark's medians, the speed-up, the nodes Ember ran, the time
// Ember's tasks spent in C, and the geometric mean of the speed-ups.
import { readFileSync } from 'node:fs';

const [dir, sf, master, runs, warmup] = process.argv.slice(2);
const rows = JSON.parse(readFileSync(`${dir}/report.json`, 'utf8'));
const run = readFileSync(`${dir}/run.txt`, 'utf8').trim().split('\n');
const f = (x, d = 0) => (x == null ? '-' : Number(x).toFixed(d));
const lines = [];
lines.push(`# TPC-H SF ${sf} through Spark 3.5: vanilla Spark vs Spark with Ember`);
lines.push('');
lines.push(`${master}, one warm session, ${warmup} warm-up and median of ${runs} runs per side, ` +
           `the two sides taking turns run by run. ${run.join('; ')}.`);
lines.push('');
lines.push('| query | Ember ms | vanilla ms | speed-up | answers | nodes in Ember | time in Ember nodes ms |');
lines.push('| --- | ---: | ---: | ---: | --- | ---: | ---: |');
let logSum = 0, n = 0, emberSum = 0, vanillaSum = 0, equal = 0;
for (const r of rows) {
  const up = r.vanilla_ms && r.ember_ms ? r.vanilla_ms / r.ember_ms : null;
  if (up && !r.error) { logSum += Math.log(up); n++; emberSum += r.ember_ms; vanillaSum += r.vanilla_ms; }
  if (r.equal) equal++;
  lines.push(`| ${r.name} | ${f(r.ember_ms)} | ${f(r.vanilla_ms)} | ${up ? f(up, 2) + 'x' : '-'} | ` +
             `${r.error ? 'ERROR: ' + r.error.slice(0, 80) : r.equal ? 'identical' : 'DIFFER'} | ` +
             `${r.ember_nodes}/${r.spark_nodes} | ${f(r.native_ms)} |`);
}
lines.push('');
lines.push(`Geometric mean speed-up over ${n} queries: **${n ? Math.exp(logSum / n).toFixed(2) : '-'}x**; ` +
           `sums: Ember ${f(emberSum)} ms, vanilla ${f(vanillaSum)} ms (${vanillaSum && emberSum ? (vanillaSum / emberSum).toFixed(2) : '-'}x). ` +
           `Answers identical: ${equal} of ${rows.length}.`);
// where Ember's time goes: each operator's own time, summed over the queries
const ops = {};
let opTotal = 0;
for (const r of rows)
  for (const [op, ms] of Object.entries(r.native_ops_ms || {})) { ops[op] = (ops[op] || 0) + ms; opTotal += ms; }
if (opTotal > 0) {
  lines.push('');
  lines.push('Where the time in Ember nodes goes, by operator (each operator\'s own time, its children\'s ' +
             'not included, summed over tasks and queries): ' +
             Object.entries(ops).sort((a, b) => b[1] - a[1]).slice(0, 8)
               .map(([op, ms]) => `${op} ${(100 * ms / opTotal).toFixed(1)}%`).join(', ') + '.');
  lines.push('');
  lines.push('Per query, the three operators with the most own time: ' +
             rows.filter(r => r.native_ops_ms && Object.keys(r.native_ops_ms).length)
               .map(r => `${r.name} ` + Object.entries(r.native_ops_ms).sort((a, b) => b[1] - a[1]).slice(0, 3)
                 .map(([op, ms]) => `${op} ${f(ms)}`).join(', ')).join('; ') + ' (ms).');
}
lines.push('');
lines.push('"time in Ember nodes" is the time Spark tasks spent pulling from Ember nodes (their ' +
           'native work and the Spark input they pull through), summed over tasks.');
console.log(lines.join('\n'));
