select k, count(*) from li join nation on li.k = nation.n_nationkey
where nation.n_name = 'ALGERIA' group by k
