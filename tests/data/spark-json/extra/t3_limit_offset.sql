select n_name from nation order by n_name limit 3 offset 2
