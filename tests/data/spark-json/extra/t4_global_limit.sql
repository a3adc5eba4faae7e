select count(*) from (select * from orders limit 100) t
