select n_name as name, n_regionkey as k from nation where n_regionkey = 1
union all
select r_name as name, r_regionkey as k from region
union all
select 'a, b' as name, cast(null as bigint) as k
