select o_custkey, o_orderdate, o_totalprice,
       rank() over (partition by o_custkey order by o_totalprice desc) as rk,
       row_number() over (partition by o_custkey order by o_orderdate) as rn,
       dense_rank() over (partition by o_custkey order by o_orderdate) as drk,
       sum(o_totalprice) over (partition by o_custkey order by o_orderdate
                               rows between 2 preceding and current row) as s3,
       avg(o_totalprice) over (partition by o_custkey) as avg_all,
       lag(o_totalprice, 1) over (partition by o_custkey order by o_orderdate) as prev,
       lead(o_orderdate, 2, date '2000-01-01') over (partition by o_custkey order by o_orderdate) as nxt,
       count(*) over (partition by o_orderstatus order by o_orderdate
                      range between unbounded preceding and current row) as cnt
from orders
where o_custkey < 100
