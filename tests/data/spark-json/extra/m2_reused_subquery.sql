select p_partkey from part
where p_retailprice > (select avg(p_retailprice) from part)
union all
select ps_partkey from partsupp
where ps_supplycost > (select avg(p_retailprice) from part)
