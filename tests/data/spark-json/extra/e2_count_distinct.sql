select l_returnflag, count(distinct l_suppkey) as ns, count(distinct l_partkey) as np, sum(l_quantity) as q
from lineitem
group by l_returnflag
