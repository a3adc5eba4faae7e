select c_custkey, o_orderkey, n_name
from customer
left outer join orders on c_custkey = o_custkey and o_totalprice > 1000
right outer join nation on c_nationkey = n_nationkey
where n_regionkey < 3
