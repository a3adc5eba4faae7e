select /*+ MERGE(orders) */ c_custkey, o_orderkey
from customer full outer join orders on c_custkey = o_custkey
