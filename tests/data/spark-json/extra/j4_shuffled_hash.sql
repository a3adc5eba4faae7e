select /*+ SHUFFLE_HASH(supplier) */ s_name, n_name
from supplier join nation on s_nationkey = n_nationkey
