select n_name from nation where n_nationkey < 5
union
select r_name from region
