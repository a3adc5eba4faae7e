select /*+ COALESCE(1) */ r_name from region
