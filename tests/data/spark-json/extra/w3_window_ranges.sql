select l_orderkey, l_linenumber,
       sum(l_linenumber) over (partition by l_orderkey order by l_linenumber
                               range between 1 preceding and 1 following) as s,
       first_value(l_quantity) over (partition by l_orderkey order by l_linenumber) as fv,
       ntile(2) over (partition by l_orderkey order by l_linenumber) as nt,
       percent_rank() over (partition by l_orderkey order by l_linenumber) as pr,
       cume_dist() over (order by l_orderkey) as cd
from lineitem where l_orderkey < 50
