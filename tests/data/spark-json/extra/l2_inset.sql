select count(*) from lineitem
where l_suppkey in (1,2,3,4,5,6,7,8,9,10,11,12,13,14,15)
  and l_shipmode in ('MAIL','SHIP','AIR','RAIL','TRUCK','FOB','REG AIR','A','B','C','D, E')
  and l_quantity not in (1, 2, 3)
