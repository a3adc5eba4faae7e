select id * 2 as x from (select * from range(0, 10, 2)) tablesample (50 percent) where id > 1
