select * from (
  select l_orderkey, l_linenumber, l_quantity,
         rank() over (partition by l_orderkey order by l_quantity desc) as r
  from lineitem) t
where r <= 2
