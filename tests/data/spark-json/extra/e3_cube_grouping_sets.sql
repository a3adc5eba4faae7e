select n_regionkey, n_name, count(*) as c, grouping_id() as g
from nation
group by grouping sets ((n_regionkey), (n_name), ())
