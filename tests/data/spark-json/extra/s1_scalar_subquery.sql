select p_name, p_retailprice,
       (select max(s_acctbal) from supplier) as maxbal
from part
where p_retailprice > (select avg(p_retailprice) from part)
  and p_size = (select min(ps_availqty) from partsupp where ps_partkey = 7)
