select s_name from supplier
where s_acctbal > (select avg(c_acctbal) from customer
                   where c_nationkey = (select max(n_nationkey) from nation where n_regionkey = 1))
