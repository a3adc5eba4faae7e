// SPDX-License-Identifier: Apache-2.0
// Checks a generated TPC-H warehouse with DuckDB, independently of Ember's
// reader: the Parquet column types of the chosen schema, the cardinalities of
// the scale factor, no nulls, and the specification's rules as SQL that counts
// violating rows (each must count 0): keys and foreign keys, the partsupp
// supplier formula, derived columns (extended price, total price, order
// status, return flag, line status), value ranges and the text rules.
//
// usage: node tpch_checks.mjs DATA_DIR SF spark|standard
// Prints one line per check and "N passed, N failed"; exits 1 on any failure.
import { duckConnect } from './peers.mjs';

const [dataDir, sfText, schema] = process.argv.slice(2);
if (!dataDir || !sfText || !['spark', 'standard'].includes(schema)) {
  console.error('usage: node tpch_checks.mjs DATA_DIR SF spark|standard');
  process.exit(2);
}
const sf = Number(sfText);
const money = schema === 'spark' ? 'DECIMAL(10,0)' : 'DECIMAL(15,2)';
const tables = {
  part: ['p_partkey BIGINT', 'p_name VARCHAR', 'p_mfgr VARCHAR', 'p_brand VARCHAR', 'p_type VARCHAR',
    'p_size INTEGER', 'p_container VARCHAR', `p_retailprice ${money}`, 'p_comment VARCHAR'],
  supplier: ['s_suppkey BIGINT', 's_name VARCHAR', 's_address VARCHAR', 's_nationkey BIGINT',
    's_phone VARCHAR', `s_acctbal ${money}`, 's_comment VARCHAR'],
  partsupp: ['ps_partkey BIGINT', 'ps_suppkey BIGINT', 'ps_availqty INTEGER',
    `ps_supplycost ${money}`, 'ps_comment VARCHAR'],
  customer: ['c_custkey BIGINT', 'c_name VARCHAR', 'c_address VARCHAR', 'c_nationkey BIGINT',
    'c_phone VARCHAR', `c_acctbal ${money}`, 'c_mktsegment VARCHAR', 'c_comment VARCHAR'],
  orders: ['o_orderkey BIGINT', 'o_custkey BIGINT', 'o_orderstatus VARCHAR', `o_totalprice ${money}`,
    'o_orderdate DATE', 'o_orderpriority VARCHAR', 'o_clerk VARCHAR', 'o_shippriority INTEGER',
    'o_comment VARCHAR'],
  lineitem: ['l_orderkey BIGINT', 'l_partkey BIGINT', 'l_suppkey BIGINT', 'l_linenumber INTEGER',
    `l_quantity ${money}`, `l_extendedprice ${money}`, `l_discount ${money}`, `l_tax ${money}`,
    'l_returnflag VARCHAR', 'l_linestatus VARCHAR', 'l_shipdate DATE', 'l_commitdate DATE',
    'l_receiptdate DATE', 'l_shipinstruct VARCHAR', 'l_shipmode VARCHAR', 'l_comment VARCHAR'],
  nation: ['n_nationkey BIGINT', 'n_name VARCHAR', 'n_regionkey BIGINT', 'n_comment VARCHAR'],
  region: ['r_regionkey BIGINT', 'r_name VARCHAR', 'r_comment VARCHAR'],
};
const rows = { part: 200000 * sf, supplier: 10000 * sf, partsupp: 800000 * sf,
  customer: 150000 * sf, orders: 1500000 * sf, nation: 25, region: 5 };
const S = Math.round(10000 * sf);

const con = await duckConnect(2);
let passed = 0, failed = 0;
const check = (name, ok, detail = '') => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
};
const one = async (sql) => (await con.runAndReadAll(sql)).getRows()[0][0];

for (const t of Object.keys(tables)) {
  await con.run(`CREATE VIEW ${t} AS SELECT * FROM read_parquet('${dataDir}/${t}/*.parquet')`);
  const desc = (await con.runAndReadAll(`DESCRIBE ${t}`)).getRows().map((r) => `${r[0]} ${r[1]}`);
  check(`${t} columns`, desc.join(',') === tables[t].join(','), desc.join(','));
  const nulls = tables[t].map((c) => `count(*) - count(${c.split(' ')[0]})`).join(' + ');
  const n = Number(await one(`SELECT count(*) FROM ${t}`));
  check(`${t} has no nulls`, Number(await one(`SELECT ${nulls} FROM ${t}`)) === 0);
  if (rows[t] !== undefined) check(`${t} rows`, n === Math.round(rows[t]), `${n}`);
}

const moneyScale = schema === 'spark' ? 1 : 100; // stored units per dollar
const violations = {
  'part keys 1..P': `SELECT count(*) - count(DISTINCT p_partkey) + count(*) FILTER (WHERE p_partkey < 1 OR p_partkey > ${rows.part}) FROM part`,
  'p_retailprice formula': `SELECT count(*) FROM part WHERE round(p_retailprice * ${moneyScale}) <> round((90000 + ((p_partkey // 10) % 20001) + 100 * (p_partkey % 1000)) * ${moneyScale} / 100.0)`,
  'p_name five words': `SELECT count(*) FROM part WHERE len(string_split(p_name, ' ')) <> 5`,
  'p_brand matches p_mfgr': `SELECT count(*) FROM part WHERE substr(p_brand, 7, 1) <> substr(p_mfgr, 14, 1) OR p_size NOT BETWEEN 1 AND 50`,
  'partsupp 4 distinct suppliers per part': `SELECT count(*) FROM (SELECT ps_partkey FROM partsupp GROUP BY ps_partkey HAVING count(DISTINCT ps_suppkey) <> 4)`,
  'ps_suppkey formula': `SELECT count(*) FROM partsupp WHERE ps_suppkey NOT IN (${[0, 1, 2, 3].map((i) => `(ps_partkey + ${i} * (${S} // 4 + (ps_partkey - 1) // ${S})) % ${S} + 1`).join(', ')})`,
  'ps_availqty and ps_supplycost ranges': `SELECT count(*) FROM partsupp WHERE ps_availqty NOT BETWEEN 1 AND 9999 OR ps_supplycost NOT BETWEEN 1 AND 1000`,
  'phones start with nation key + 10': `SELECT (SELECT count(*) FROM supplier WHERE substr(s_phone, 1, 2)::INT <> s_nationkey + 10 OR length(s_phone) <> 15) + (SELECT count(*) FROM customer WHERE substr(c_phone, 1, 2)::INT <> c_nationkey + 10)`,
  'acctbal ranges': `SELECT (SELECT count(*) FROM supplier WHERE s_acctbal NOT BETWEEN -1000 AND 10000) + (SELECT count(*) FROM customer WHERE c_acctbal NOT BETWEEN -1000 AND 10000)`,
  'orders keys sparse (8 of every 32)': `SELECT count(*) FROM orders WHERE (o_orderkey - 1) % 32 >= 8`,
  'o_custkey exists and is not a multiple of 3': `SELECT count(*) FROM orders LEFT JOIN customer ON o_custkey = c_custkey WHERE c_custkey IS NULL OR o_custkey % 3 = 0`,
  'o_orderdate range': `SELECT count(*) FROM orders WHERE o_orderdate NOT BETWEEN DATE '1992-01-01' AND DATE '1998-12-31' - INTERVAL 151 DAY`,
  'o_clerk range': `SELECT count(*) FROM orders WHERE substr(o_clerk, 7)::INT NOT BETWEEN 1 AND ${Math.max(1, Math.round(1000 * sf))}`,
  'every line has its order': `SELECT count(*) FROM lineitem LEFT JOIN orders ON l_orderkey = o_orderkey WHERE o_orderkey IS NULL`,
  'every order has 1..7 lines numbered 1..n': `SELECT count(*) FROM orders LEFT JOIN (SELECT l_orderkey, count(*) n, max(l_linenumber) m FROM lineitem GROUP BY 1) ON l_orderkey = o_orderkey WHERE n IS NULL OR n NOT BETWEEN 1 AND 7 OR m <> n`,
  'line (partkey, suppkey) in partsupp': `SELECT count(*) FROM lineitem LEFT JOIN partsupp ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey WHERE ps_partkey IS NULL`,
  'l_extendedprice = quantity * retailprice': schema === 'standard'
    ? `SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey WHERE l_extendedprice <> l_quantity * p_retailprice`
    : `SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey WHERE abs(l_extendedprice - l_quantity * p_retailprice) > l_quantity`,
  'discount, tax, quantity ranges': `SELECT count(*) FROM lineitem WHERE l_discount NOT BETWEEN 0 AND 0.10 OR l_tax NOT BETWEEN 0 AND 0.08 OR l_quantity NOT BETWEEN 1 AND 50`,
  'line dates': `SELECT count(*) FROM lineitem JOIN orders ON l_orderkey = o_orderkey WHERE l_shipdate - o_orderdate NOT BETWEEN 1 AND 121 OR l_commitdate - o_orderdate NOT BETWEEN 30 AND 90 OR l_receiptdate - l_shipdate NOT BETWEEN 1 AND 30`,
  'l_returnflag and l_linestatus rules': `SELECT count(*) FROM lineitem WHERE (l_receiptdate <= DATE '1995-06-17' AND l_returnflag NOT IN ('R', 'A')) OR (l_receiptdate > DATE '1995-06-17' AND l_returnflag <> 'N') OR l_linestatus <> CASE WHEN l_shipdate > DATE '1995-06-17' THEN 'O' ELSE 'F' END`,
  'o_orderstatus from line statuses': `SELECT count(*) FROM orders JOIN (SELECT l_orderkey, bool_and(l_linestatus = 'F') f, bool_and(l_linestatus = 'O') o FROM lineitem GROUP BY 1) ON l_orderkey = o_orderkey WHERE o_orderstatus <> CASE WHEN f THEN 'F' WHEN o THEN 'O' ELSE 'P' END`,
  'o_totalprice from the lines': schema === 'standard'
    ? `SELECT count(*) FROM orders JOIN (SELECT l_orderkey, sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)) t FROM lineitem GROUP BY 1) ON l_orderkey = o_orderkey WHERE o_totalprice <> round(t, 2)`
    : `SELECT count(*) FROM orders JOIN (SELECT l_orderkey, sum(l_extendedprice) x FROM lineitem GROUP BY 1) ON l_orderkey = o_orderkey WHERE o_totalprice > x * 1.08 + 8 OR o_totalprice < x * 0.9 - 8`,
  'Customer Complaints / Recommends suppliers': `SELECT (count(*) FILTER (WHERE s_comment LIKE '%Customer%Complaints%') = 0)::INT + (count(*) FILTER (WHERE s_comment LIKE '%Customer%Recommends%') = 0)::INT FROM supplier`,
  'nations and regions': `SELECT count(*) FROM nation LEFT JOIN region ON n_regionkey = r_regionkey WHERE r_regionkey IS NULL OR n_nationkey NOT BETWEEN 0 AND 24`,
  'comment lengths': `SELECT (SELECT count(*) FROM lineitem WHERE length(l_comment) NOT BETWEEN 10 AND 43) + (SELECT count(*) FROM orders WHERE length(o_comment) NOT BETWEEN 19 AND 78) + (SELECT count(*) FROM partsupp WHERE length(ps_comment) NOT BETWEEN 49 AND 198) + (SELECT count(*) FROM customer WHERE length(c_comment) NOT BETWEEN 29 AND 116) + (SELECT count(*) FROM part WHERE length(p_comment) NOT BETWEEN 5 AND 22)`,
};
for (const [name, sql] of Object.entries(violations)) {
  try {
    const n = Number(await one(sql));
    check(name, n === 0, n === 0 ? '' : `${n} violating rows`);
  } catch (e) {
    check(name, false, e.message);
  }
}
// Under the spark schema every discount and tax rounds to 0 (half up from <= 0.10).
if (schema === 'spark')
  check('spark: discounts and taxes are 0', Number(await one(`SELECT count(*) FROM lineitem WHERE l_discount <> 0 OR l_tax <> 0`)) === 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
