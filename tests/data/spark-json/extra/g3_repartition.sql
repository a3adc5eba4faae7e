select /*+ REPARTITION(3) */ r_name from region
