#!lua name=lib1
redis.register_function('f1', function() return 1 end)
redis.register_function('f2', function() return 2 end)
redis.register_function('f3', function() return 3 end)