#!lua name=a
redis.register_function('f',function()end)