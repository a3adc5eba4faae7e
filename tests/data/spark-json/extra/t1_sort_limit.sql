select o_orderkey, o_totalprice from orders order by o_totalprice desc nulls last, o_orderkey limit 7
