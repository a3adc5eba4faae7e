select cast(o_totalprice as double) as d, count(*) as c, max(cast(o_custkey as float)) as mf
from orders group by cast(o_totalprice as double) having c > 1
