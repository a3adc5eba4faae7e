select l_returnflag,
       min(l_shipdate), max(l_comment), avg(l_quantity), stddev(l_extendedprice),
       first(l_linenumber), last(l_orderkey), count(l_comment), sum(l_linenumber),
       collect_set(l_shipmode), sum(cast(l_quantity as double)),
       count_if(l_quantity > 10), max_by(l_orderkey, l_extendedprice)
from lineitem
group by l_returnflag
having count(*) > 1
