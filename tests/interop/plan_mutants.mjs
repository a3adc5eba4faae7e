// SPDX-License-Identifier: Apache-2.0
// Damaged plans: each shared Spark plan mutated line by line, every mutant
// run through `ember explain` and `ember run`. A mutant must give a clear
// error (non-zero exit, a message on stderr, no signal) or the unmutated
// plan's answer; `explain` and `run` must accept and reject the same texts.
//
//   node plan_mutants.mjs --bin EMBER --warehouse DIR --out DIR
//        [--every N] [--jobs 2] [--version 3.5] PLAN...
//
// Mutations of line i (1-based in the report): delete it, duplicate it,
// swap it with the next line, and for a line holding a bracketed list of
// two or more items, drop the list's last item. --every N keeps mutant k
// when k % N == 0 (deterministic), so CI runs a sample and a script all.
// Writes the bad mutants (their text and what went wrong) under --out and
// prints one summary line per plan, then the totals. Exit 1 on any bad one.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const args = process.argv.slice(2);
const opt = { every: 1, jobs: 2, version: '3.5' };
const plans = [];
for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--bin') opt.bin = args[++i];
    else if (a === '--warehouse') opt.warehouse = args[++i];
    else if (a === '--out') opt.out = args[++i];
    else if (a === '--every') opt.every = Number(args[++i]);
    else if (a === '--jobs') opt.jobs = Number(args[++i]);
    else if (a === '--version') opt.version = args[++i];
    else plans.push(a);
}
if (!opt.bin || !opt.warehouse || !opt.out || plans.length === 0 || !(opt.every >= 1)) {
    console.error('usage: plan_mutants.mjs --bin EMBER --warehouse DIR --out DIR [--every N] PLAN...');
    process.exit(2);
}
mkdirSync(opt.out, { recursive: true });

function run(argv, input) {
    return new Promise((resolve) => {
        const child = execFile(opt.bin, argv, { maxBuffer: 64 << 20, timeout: 120000 },
            (error, stdout, stderr) => {
                resolve({
                    code: error ? (typeof error.code === 'number' ? error.code : null) : 0,
                    signal: error ? error.signal : null,
                    stdout, stderr,
                });
            });
        child.stdin.end(input);
    });
}

const runArgs = ['run', '-', '--warehouse', opt.warehouse, '--spark-version', opt.version,
    '--format', 'csv', '--threads', '1'];
const explainArgs = ['explain', '-', '--spark-version', opt.version];

// rows as a multiset: a damaged plan may lose an ORDER BY's effect on ties
// only by changing the answer, which the sorted text still shows
const canonical = (csv) => csv.split('\n').filter((l) => l !== '').sort().join('\n');

function* mutants(lines) {
    for (let i = 0; i < lines.length; i++) {
        yield ['delete', i, [...lines.slice(0, i), ...lines.slice(i + 1)]];
        yield ['duplicate', i, [...lines.slice(0, i + 1), ...lines.slice(i)]];
        if (i + 1 < lines.length && lines[i] !== lines[i + 1])
            yield ['swap', i, [...lines.slice(0, i), lines[i + 1], lines[i], ...lines.slice(i + 2)]];
        const m = /^(.*\[)([^\[\]]*,[^\[\]]*)(\].*)$/.exec(lines[i]);
        if (m) {
            const items = m[2].split(',');
            const cut = m[1] + items.slice(0, -1).join(',') + m[3];
            yield ['truncate-list', i, [...lines.slice(0, i), cut, ...lines.slice(i + 1)]];
        }
    }
}

/* CSV fields of one line (Ember quotes a field holding a comma or a quote). */
function fields(line) {
    const out = [];
    let cur = '', quoted = false;
    for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (quoted) {
            if (c === '"' && line[i + 1] === '"') { cur += '"'; i++; }
            else if (c === '"') quoted = false;
            else cur += c;
        } else if (c === '"') quoted = true;
        else if (c === ',') { out.push(cur); cur = ''; }
        else cur += c;
    }
    out.push(cur);
    return out;
}

/* Cutting the last item of the last list of TakeOrderedAndProject's
 * Arguments leaves a well-formed plan of another query: the same rows
 * without their last column. That answer, exactly, is accepted. */
function lastColumnDropped(baseCsv, csv) {
    const strip = (l) => { const f = fields(l); f.pop(); return f; };
    const want = baseCsv.split('\n').filter((l) => l !== '').map((l) => JSON.stringify(strip(l))).sort();
    const got = csv.split('\n').filter((l) => l !== '').map((l) => JSON.stringify(fields(l))).sort();
    return want.length === got.length && want.every((w, i) => w === got[i]);
}

/* What is wrong with one outcome, or null. */
function judge(base, ex, rn, kind, line, baseCsv) {
    for (const [what, r] of [['explain', ex], ['run', rn]]) {
        if (r.signal) return `${what} died of ${r.signal}`;
        if (r.code === null) return `${what} did not finish`;
        if (r.code >= 128) return `${what} exited ${r.code} (a signal or a sanitizer)`;
        if (r.code !== 0 && r.stderr.trim() === '') return `${what} failed without a message`;
        if (/AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:/.test(r.stderr))
            return `${what}: a sanitizer report`;
    }
    if (rn.code === 0 && canonical(rn.stdout) !== base &&
        !(kind === 'truncate-list' && /^Arguments: /.test(line) && lastColumnDropped(baseCsv, rn.stdout)))
        return 'run exited 0 with another answer';
    if ((ex.code === 0) !== (rn.code === 0)) {
        // a run may still fail on the data (an overflow, a missing file):
        // only a rejection of the plan itself must be explain's too
        if (ex.code === 0 && /^ember: .*:\d+:\d+: /m.test(rn.stderr))
            return 'run rejects the text at plan:LINE:COL, explain accepts it';
        if (ex.code !== 0) return 'explain rejects the text, run accepts it';
    }
    return null;
}

const totals = { mutants: 0, errors: 0, same: 0, bad: 0 };
for (const plan of plans) {
    const text = readFileSync(plan, 'utf8');
    const lines = text.split('\n');
    const base0 = await run(runArgs, text);
    if (base0.code !== 0) {
        console.error(`${plan}: the unmutated plan fails: ${base0.stderr.trim()}`);
        process.exit(1);
    }
    const base = canonical(base0.stdout);
    const todo = [];
    let k = 0;
    for (const m of mutants(lines)) {
        if (k++ % opt.every === 0) todo.push(m);
    }
    const per = { mutants: 0, errors: 0, same: 0, bad: 0 };
    let next = 0;
    async function worker() {
        while (next < todo.length) {
            const [kind, line, mlines] = todo[next++];
            const mtext = mlines.join('\n');
            const ex = await run(explainArgs, mtext);
            const rn = await run(runArgs, mtext);
            per.mutants++;
            const bad = judge(base, ex, rn, kind, lines[line], base0.stdout);
            if (bad) {
                per.bad++;
                const name = `${basename(plan, '.txt')}-${kind}-line${line + 1}`;
                writeFileSync(join(opt.out, `${name}.txt`), mtext);
                writeFileSync(join(opt.out, `${name}.why`),
                    `${bad}\nexplain: exit ${ex.code} ${ex.signal ?? ''}\n${ex.stderr}\n` +
                    `run: exit ${rn.code} ${rn.signal ?? ''}\n${rn.stderr}\n`);
                console.log(`BAD ${name}: ${bad}`);
            } else if (rn.code === 0) per.same++;
            else per.errors++;
        }
    }
    await Promise.all(Array.from({ length: opt.jobs }, worker));
    console.log(`${plan}: ${per.mutants} mutants, ${per.errors} clear errors, ` +
        `${per.same} unmutated answers, ${per.bad} bad`);
    for (const key of Object.keys(totals)) totals[key] += per[key];
}
console.log(`plan_mutants: ${totals.mutants} mutants, ${totals.errors} clear errors, ` +
    `${totals.same} unmutated answers, ${totals.bad} bad`);
process.exit(totals.bad ? 1 : 0);
