select o_orderkey from orders
where o_custkey in (select c_custkey from customer where c_mktsegment = 'BUILDING')
  and o_orderkey not in (select l_orderkey from lineitem where l_quantity > 49)
