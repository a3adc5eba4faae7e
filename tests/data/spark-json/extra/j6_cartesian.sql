select /*+ SHUFFLE_REPLICATE_NL(r) */ n_name, r_name
from nation n cross join region r
