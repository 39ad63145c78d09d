-- shardline's script sandbox (chunk "=shardline"), run once in every fresh Lua VM, after the
-- libraries and the `redis` table are in place. Called with the private helpers the Rust side
-- gives it; returns the functions the Rust side keeps (run, the user-facing environment).
--
-- What it builds, following Redis 7.0 (eval.c, script_lua.c, function_lua.c):
--  * global protection: scripts read globals through a proxy table; a missing global raises
--    "Script attempted to access nonexistent global variable 'x'", any assignment to a global
--    or to a library table raises "Attempt to modify a readonly table";
--  * `pcall` that returns an error table's `err` string, as Redis 7.0's does;
--  * suspension: a script runs in a coroutine that the reactor resumes, so it may yield when
--    its task quota is used up (the count hook) or while a redis.call waits for another
--    shard. Lua 5.1 cannot yield across pcall (a C function), so `pcall` runs its function in
--    a coroutine of its own and passes such yields through to the caller.
local helpers = ...
local adopt, release, hop_pending = helpers.adopt, helpers.release, helpers.hop_pending
local getinfo = helpers.getinfo

local create, resume, status, yield, running =
  coroutine.create, coroutine.resume, coroutine.status, coroutine.yield, coroutine.running
local select, type, unpack, error, tostring, next, ipairs =
  select, type, unpack, error, tostring, next, ipairs
local raw_setmetatable, raw_getmetatable, raw_rawset, raw_rawget =
  setmetatable, getmetatable, rawset, rawget
local raw_loadstring, raw_setfenv, byte = loadstring, setfenv, string.byte

local G = _G
local READONLY = "Attempt to modify a readonly table"

local function pack(...) return { n = select('#', ...), ... } end

local function is_lua_function(f)
  return type(f) == 'function' and getinfo(f, 'S').what ~= 'C'
end

-- Runs f(...) in a coroutine of its own, passing the yields of the count hook and of
-- redis.call hops up to the caller's coroutine. Returns the coroutine and resume's results.
local function run_nested(f, ...)
  local co = create(f)
  adopt(co)
  local r = pack(resume(co, ...))
  while status(co) == 'suspended' do
    r = pack(resume(co, yield(unpack(r, 2, r.n))))
  end
  release(co)
  return co, r
end

-- Redis 7.0's pcall: an error table {err=...} (a failed redis.call) is returned as its string.
local function script_pcall(f, ...)
  local _, r
  if is_lua_function(f) then
    _, r = run_nested(f, ...)
  else
    -- A C function (redis.call among them) is called from a Lua closure, so a yield in it
    -- still reaches the runtime.
    _, r = run_nested(function(...) return f(...) end, ...)
  end
  if not r[1] and type(r[2]) == 'table' and type(r[2].err) == 'string' then
    r[2] = r[2].err
  end
  return unpack(r, 1, r.n)
end

local function script_xpcall(f, handler)
  local r = pack(script_pcall(f))
  if r[1] then return unpack(r, 1, r.n) end
  return false, handler(r[2])
end

-- Read-only views of tables: writes raise READONLY; reads see the real table.
local real_of = raw_setmetatable({}, { __mode = 'k' })
local function readonly_error() error(READONLY, 2) end
local function readonly(t)
  local proxy = {}
  real_of[proxy] = t
  return raw_setmetatable(proxy, {
    __index = t,
    __newindex = readonly_error,
    __metatable = false,
  })
end

-- Globals: scripts see `env`, whose reads go to G and whose writes are refused.
local env = {}
real_of[env] = G
local env_meta = { __index = G, __newindex = readonly_error }
env_meta.__metatable = readonly(env_meta)
raw_setmetatable(env, env_meta)

local function unwrap(t) return real_of[t] or t end

G.setmetatable = function(t, mt)
  if real_of[t] then error(READONLY, 2) end
  return raw_setmetatable(t, mt)
end
G.rawset = function(t, k, v)
  if real_of[t] then error(READONLY, 0) end
  return raw_rawset(t, k, v)
end
G.rawget = function(t, k) return raw_rawget(unwrap(t), k) end
G.next = function(t, k) return next(unwrap(t), k) end
G.pairs = function(t) return next, unwrap(t), nil end
G.ipairs = function(t) return ipairs(unwrap(t)) end
G.pcall = script_pcall
G.xpcall = script_xpcall
G.loadstring = function(s, name)
  -- Precompiled (binary) chunks are refused, as Redis refuses them.
  if type(s) == 'string' and byte(s, 1) == 27 then return nil, 'binary chunks are not allowed' end
  local f, err = raw_loadstring(s, name)
  if f then raw_setfenv(f, env) end
  return f, err
end
G.load = function(source, name)
  local f, err = helpers.load(source, name)
  if f then raw_setfenv(f, env) end
  return f, err
end

-- Coroutines of the script's own: a yield of the runtime (a redis.call waiting for another
-- shard) inside one goes on up to the runtime, not to the script's resume.
local function user_resume(co, ...)
  local r = pack(resume(co, ...))
  while r[1] and status(co) == 'suspended' and hop_pending() do
    r = pack(resume(co, yield()))
  end
  return unpack(r, 1, r.n)
end
local user_coroutine = {}
for k, v in next, coroutine do user_coroutine[k] = v end
user_coroutine.resume = user_resume
user_coroutine.wrap = function(f)
  local co = create(f)
  return function(...)
    local r = pack(user_resume(co, ...))
    if not r[1] then error(r[2], 2) end
    return unpack(r, 2, r.n)
  end
end
G.coroutine = user_coroutine

for _, name in ipairs({ 'print', 'loadfile', 'dofile', 'getfenv', 'setfenv', 'newproxy',
                        'module', 'require', 'debug', 'package', 'os', 'io' }) do
  G[name] = nil
end
for _, name in ipairs({ 'redis', 'cjson', 'cmsgpack', 'bit', 'struct', 'string', 'table',
                        'math', 'coroutine' }) do
  if G[name] ~= nil then G[name] = readonly(G[name]) end
end
G._G = env
raw_setmetatable(G, { __index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end })

-- Where an error was raised: the innermost frame of a script (not of this sandbox and not a
-- C function) in the dead coroutine `co`, as Redis's error handler finds it.
local function error_position(co)
  for level = 0, 200 do
    local info = getinfo(co, level, 'Sl')
    if not info then return nil end
    if info.what ~= 'C' and info.source ~= '=shardline' then
      return info.source, info.currentline
    end
  end
end

-- Runs a script's function: true and its first result, or false, the error value and where
-- it was raised (source, line).
local function run(f, ...)
  local co, r = run_nested(f, ...)
  if r[1] then return true, r[2] end
  local source, line = error_position(co)
  return false, r[2], source, line
end

return { run = run, env = env, readonly = readonly }
