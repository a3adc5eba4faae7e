select l_orderkey,
       cast(l_shipdate as timestamp) as ts,
       date_add(l_shipdate, 7) as d7,
       datediff(l_receiptdate, l_shipdate) as dd,
       year(l_shipdate) as y,
       l_quantity % 7 as m,
       l_orderkey div 3 as q,
       round(l_extendedprice * 1.1, 2) as r,
       abs(l_discount - 1) as a,
       pmod(l_linenumber, 3) as pm,
       l_extendedprice / l_quantity as ratio,
       cast(l_tax as int) + l_linenumber as s,
       l_suppkey & 3 as band,
       isnull(l_comment) as inull,
       greatest(l_quantity, l_tax) as g,
       nvl(l_comment, '-') as nv
from lineitem
where l_shipdate between date '1995-01-01' and date '1995-01-31'
  and l_comment is not null
  and not (l_quantity <=> 5)
