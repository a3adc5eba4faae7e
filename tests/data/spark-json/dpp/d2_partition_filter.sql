select o_orderkey, k from li where k = 2 and o_totalprice > 1000
