select * from values (1, 'a, b'), (2, ''), (3, null) as t(k, v)
