select o_orderpriority, count(distinct o_custkey) as dc, avg(o_totalprice) as ap,
       percentile_approx(o_totalprice, 0.5) as med, collect_list(o_orderstatus) as cl,
       sum(distinct o_shippriority) as sd
from orders group by o_orderpriority
