select (select max(l_quantity) from lineitem) as mx,
       (select min(l_quantity) from lineitem) as mn,
       (select count(*) from lineitem) as cnt
