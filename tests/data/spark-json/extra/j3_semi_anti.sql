select c_custkey from customer
where exists (select 1 from orders where o_custkey = c_custkey and o_orderstatus = 'F')
  and not exists (select 1 from orders where o_custkey = c_custkey and o_orderstatus = 'O')
