select r_name, p, v from region lateral view outer posexplode(split(r_comment, ' ')) t as p, v
