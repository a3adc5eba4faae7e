select c_custkey from customer
where c_nationkey = 1
   or exists (select 1 from orders where o_custkey = c_custkey)
