select l_returnflag, l_linestatus, sum(l_quantity) as q, count(*) as c
from lineitem
group by rollup(l_returnflag, l_linestatus)
order by l_returnflag, l_linestatus
