select n_name, x from nation lateral view explode(array(1, 2, n_regionkey)) t as x
where n_nationkey < 3
