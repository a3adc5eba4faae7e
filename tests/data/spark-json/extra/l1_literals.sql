select c_name,
       concat(c_name, 'a, b', '') as s1,
       case when c_acctbal > 100 then 'rich, very' when c_acctbal < 0 then '' else null end as s2,
       cast(c_custkey as string) as s3,
       cast(c_acctbal as double) * 1.5e0 as d1,
       cast(c_custkey as float) / 3.0f as f1,
       c_acctbal + 12.345 as dec1,
       -c_custkey as neg,
       coalesce(c_comment, 'none') as s4,
       if(c_nationkey = 3, 'three', 'other') as s5,
       substring(c_phone, 1, 2) as pre,
       upper(c_mktsegment) as seg,
       length(c_address) as len,
       date '1995-03-15' as d,
       timestamp '2024-03-10 10:30:00.123456' as ts,
       true as b,
       cast(c_custkey as smallint) as si,
       cast(c_custkey as tinyint) as ti,
       12345678901 as big
from customer
where c_mktsegment in ('BUILDING', 'a, b', '', 'x#1')
  and c_name like '%000%'
  and c_comment not like 'a%b'
  and c_phone rlike '^1[0-9]'
