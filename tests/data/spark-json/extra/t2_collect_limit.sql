select o_orderkey from orders limit 5
