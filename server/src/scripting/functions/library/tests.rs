//! Expected texts are replies of redis-server 7.0.15 (port 6420) to
//! `redis-cli function load replace "<payload>"` with the same payloads.

use super::*;
use mlua::Lua;

/// A Lua state with a `redis` table like the server's (log, levels, version).
fn lua() -> Lua {
    let lua = Lua::new();
    lua.load(
        r#"
        LOGGED = {}
        redis = {
          log = function(level, msg) LOGGED[#LOGGED + 1] = level .. ':' .. msg end,
          LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
          REDIS_VERSION = '7.0.15', REDIS_VERSION_NUM = 458767,
          call = function() return 'called' end,
        }
        "#,
    )
    .exec()
    .expect("setup");
    lua
}

fn load(lua: &Lua, code: &str) -> Result<Vec<RegisteredFunction>, String> {
    let meta = Metadata::parse(code.as_bytes())?;
    register(lua, code.as_bytes(), &meta)
}

fn err(code: &str) -> String {
    load(&lua(), code).expect_err("should fail")
}

const REG: &str = "ERR Error registering functions: ERR ";

#[test]
fn registers_both_forms() {
    let lua = lua();
    let fs = load(
        &lua,
        "#!lua name=lib1\nredis.register_function(\"f1\", function() return 1 end)\nredis.register_function{function_name=\"f2\", callback=function() return 2 end, flags={\"no-writes\",\"allow-stale\"}, description=\"desc two\"}",
    )
    .expect("loads");
    // FUNCTION LIST of this library on redis-server: f1 (description nil, flags []),
    // f2 (description "desc two", flags [no-writes, allow-stale]).
    assert_eq!(fs.len(), 2);
    assert_eq!(
        fs[0].info(),
        FunctionInfo {
            name: "f1".into(),
            flags: FunctionFlags::EMPTY,
            description: None
        }
    );
    assert_eq!(
        fs[1].info(),
        FunctionInfo {
            name: "f2".into(),
            flags: FunctionFlags::NO_WRITES | FunctionFlags::ALLOW_STALE,
            description: Some(Bytes::from_static(b"desc two"))
        }
    );
    assert_eq!(fs[0].callback.call::<i64>(()).expect("call"), 1);
    assert_eq!(fs[1].callback.call::<i64>(()).expect("call"), 2);
    // The caller's redis table is left as it was.
    let redis: Table = lua.globals().get("redis").expect("redis");
    assert!(redis
        .get::<Value>("register_function")
        .expect("get")
        .is_nil());
}

#[test]
fn number_names_and_descriptions_are_coerced() {
    // redis-server accepted register_function(1, fn) (function "1") and description=1.5
    // (listed as "1.5"); flags are read from t[1], t[2], ... up to the first nil,
    // case-insensitively: {"NO-WRITES", x="allow-oom"} gives no-writes only,
    // {[1]="allow-oom",[3]="no-writes"} gives allow-oom only.
    let lua = lua();
    let fs = load(
        &lua,
        "#!lua name=ok3\nredis.register_function(1, function() end)",
    )
    .expect("ok");
    assert_eq!(fs[0].name, "1");
    let fs = load(&lua, "#!lua name=ok3\nredis.register_function({function_name=\"ab\", callback=function() end, flags={\"NO-WRITES\", x=\"allow-oom\"}, description=1.5})").expect("ok");
    assert_eq!(fs[0].flags, FunctionFlags::NO_WRITES);
    assert_eq!(fs[0].description.as_deref(), Some(&b"1.5"[..]));
    let fs = load(&lua, "#!lua name=e\nredis.register_function{function_name=\"f\", callback=function() end, flags={[1]=\"allow-oom\",[3]=\"no-writes\"}}").expect("ok");
    assert_eq!(fs[0].flags, FunctionFlags::ALLOW_OOM);
    let fs = load(&lua, "#!lua name=e\nredis.register_function{function_name=\"f\", callback=function() end, flags={\"no-writes\", nil, \"allow-oom\"}}").expect("ok");
    assert_eq!(fs[0].flags, FunctionFlags::NO_WRITES);
    let fs = load(&lua, "#!lua name=e\nredis.register_function{function_name=\"f\", callback=function() end, description=nil, flags={}}").expect("ok");
    assert_eq!(fs[0].info().description, None);
}

#[test]
fn register_function_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "redis.register_function()",
            "wrong number of arguments to redis.register_function",
        ),
        (
            "redis.register_function('f1', function() return 1 end, {}, 'description', 'extra arg')",
            "wrong number of arguments to redis.register_function",
        ),
        (
            "redis.register_function(\"x\", function() end, nil)",
            "wrong number of arguments to redis.register_function",
        ),
        (
            "redis.register_function(\"x\")",
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        ),
        (
            "redis.register_function(nil)",
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        ),
        (
            "redis.register_function(\"x\", 1)",
            "second argument to redis.register_function must be a function",
        ),
        (
            "redis.register_function(nil, 1)",
            "first argument to redis.register_function must be a string",
        ),
        (
            "redis.register_function(nil, function() end)",
            "first argument to redis.register_function must be a string",
        ),
        (
            "redis.register_function(\"\", function() return 1 end)",
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "redis.register_function(\"a-b\", function() return 1 end)",
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "redis.register_function(1.5, function() end)",
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "redis.register_function('test\\0test', function() return 1 end)",
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "redis.register_function({})",
            "redis.register_function must get a function name argument",
        ),
        (
            "redis.register_function({function_name=\"x\"})",
            "redis.register_function must get a callback argument",
        ),
        (
            "redis.register_function({callback=function() end})",
            "redis.register_function must get a function name argument",
        ),
        (
            "redis.register_function{function_name=nil, callback=function() end}",
            "redis.register_function must get a function name argument",
        ),
        (
            "redis.register_function({function_name=\"a-b\", callback=function() end})",
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "redis.register_function{function_name=function() return 1 end, callback=function() return 'hello' end, description='some desc'}",
            "function_name argument given to redis.register_function must be a string",
        ),
        (
            "redis.register_function{function_name='f1', callback='bad', description='some desc'}",
            "callback argument given to redis.register_function must be a function",
        ),
        (
            "redis.register_function{function_name='f1', callback=function() return 'hello' end, description=function() return 1 end}",
            "description argument given to redis.register_function must be a string",
        ),
        (
            "redis.register_function({function_name=\"ab\", callback=function() end, flags=\"x\"})",
            "flags argument to redis.register_function must be a table representing function flags",
        ),
        (
            "redis.register_function({function_name=\"ab\", callback=function() end, flags={\"x\"}})",
            "unknown flag given",
        ),
        (
            "redis.register_function({function_name=\"ab\", callback=function() end, flags={1}})",
            "unknown flag given",
        ),
        (
            "redis.register_function{function_name = 'f1', callback = function() return 1 end, flags = {function() return 1 end}}",
            "unknown flag given",
        ),
        (
            "redis.register_function({function_name=\"ab\", callback=function() end, foo=1})",
            "unknown argument given to redis.register_function",
        ),
        (
            "redis.register_function({function_name=\"ab\", callback=function() end, [1]=1})",
            "unknown argument given to redis.register_function",
        ),
        (
            "redis.register_function({\"ab\", function() end})",
            "unknown argument given to redis.register_function",
        ),
        (
            "redis.register_function(\"ab\", function() end)\nredis.register_function(\"ab\", function() end)",
            "Function already exists in the library",
        ),
        (
            "redis.register_function(\"f\", function() return 1 end)\nredis.register_function(\"g\", function() return 1 end, 1)",
            "wrong number of arguments to redis.register_function",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            err(&format!("#!lua name=ok3\n{body}")),
            format!("{REG}{want}"),
            "{body}"
        );
    }
    // Not Redis: 7.0.15 accepts "ab" and "AB" in one library, then crashes on its REPLACE.
    assert_eq!(
        err(
            "#!lua name=ok3\nredis.register_function(\"ab\", function() end)\nredis.register_function(\"AB\", function() end)"
        ),
        format!("{REG}Function already exists in the library")
    );
}

#[test]
fn load_environment_is_restricted() {
    let cases: &[(&str, &str)] = &[
        (
            "return math.random()",
            "user_function:2: Script attempted to access nonexistent global variable 'math'",
        ),
        (
            "return redis.call(\"ping\")",
            "user_function:2: Script attempted to access nonexistent global variable 'call'",
        ),
        (
            "return redis.pcall(\"ping\")",
            "user_function:2: Script attempted to access nonexistent global variable 'pcall'",
        ),
        (
            "return redis.setresp(3)",
            "user_function:2: Script attempted to access nonexistent global variable 'setresp'",
        ),
        (
            "return redis.set_repl(redis.REPL_NONE)",
            "user_function:2: Script attempted to access nonexistent global variable 'set_repl'",
        ),
        (
            "local x = string.format(\"%d\", 1)",
            "user_function:2: Script attempted to access nonexistent global variable 'string'",
        ),
        (
            "local x = pcall",
            "user_function:2: Script attempted to access nonexistent global variable 'pcall'",
        ),
        (
            "local x = _G",
            "user_function:2: Script attempted to access nonexistent global variable '_G'",
        ),
        (
            "error(\"boom\")",
            "user_function:2: Script attempted to access nonexistent global variable 'error'",
        ),
        (
            "return redis.redis.call(\"ping\")",
            "user_function:2: Script attempted to access nonexistent global variable 'redis'",
        ),
        (
            "return redis.math.random()",
            "user_function:2: Script attempted to access nonexistent global variable 'math'",
        ),
        (
            "mt = getmetatable(_G)",
            "user_function:2: Script attempted to access nonexistent global variable 'getmetatable'",
        ),
        (
            "return redis[1]",
            "user_function:2: Script attempted to access nonexistent global variable '1'",
        ),
        (
            "return redis[1.5]",
            "user_function:2: Script attempted to access nonexistent global variable '1.5'",
        ),
        (
            "return redis[true]",
            "user_function:2: Second argument to luaProtectedTableError must be a string or number",
        ),
        (
            "local t = {}\nt[{}] = 1\nreturn redis[t]",
            "user_function:4: Second argument to luaProtectedTableError must be a string or number",
        ),
        (
            "redis.foo = 1",
            "user_function:2: Attempt to modify a readonly table",
        ),
        (
            "redis.register_function = 1",
            "user_function:2: Attempt to modify a readonly table",
        ),
        (
            "a = 1",
            "user_function:2: Attempt to modify a readonly table",
        ),
        (
            "local a = nil + 1",
            "user_function:2: attempt to perform arithmetic on a nil value",
        ),
        ("return 1", "No functions registered"),
    ];
    for (body, want) in cases {
        let want = if *want == "No functions registered" {
            "ERR No functions registered".to_string()
        } else {
            format!("{REG}{want}")
        };
        assert_eq!(err(&format!("#!lua name=e\n{body}")), want, "{body}");
    }
}

#[test]
fn log_and_version_are_available_at_load() {
    // redis-server: fcall f 0 → "7.0.15 458767", and "0123" for the LOG_* levels.
    let lua = lua();
    let fs = load(&lua, "#!lua name=e\nredis.log(redis.LOG_WARNING, \"hi from load\")\nlocal v = redis.REDIS_VERSION .. \" \" .. redis.REDIS_VERSION_NUM .. \" \" .. redis.LOG_DEBUG .. redis.LOG_VERBOSE .. redis.LOG_NOTICE .. redis.LOG_WARNING\nredis.register_function(\"f\", function() return v end)").expect("loads");
    assert_eq!(
        fs[0].callback.call::<String>(()).expect("call"),
        "7.0.15 458767 0123"
    );
    let logged: Vec<String> = lua.globals().get("LOGGED").expect("logged");
    assert_eq!(logged, ["3:hi from load"]);
}

#[test]
fn compile_errors() {
    assert_eq!(
        err("#!lua name=ok\nx"),
        "ERR Error compiling function: user_function:2: '=' expected near '<eof>'"
    );
    assert_eq!(
        err(
            "#!lua name=test\nredis.register_function('test', function(KEYS, ARGV)\n bad script \nend)"
        ),
        "ERR Error compiling function: user_function:3: '=' expected near 'script'"
    );
    // Messages stop at a NUL byte (payloads sent with `redis-cli -x`).
    assert_eq!(
        err("#!lua name=ta\nx\0"),
        "ERR Error compiling function: user_function:2: '=' expected"
    );
    assert_eq!(
        err("#!lua name=ta\n\0"),
        "ERR Error compiling function: user_function:2: unexpected symbol"
    );
}

#[test]
fn callbacks_run_with_the_runtime_globals() {
    // functions.tcl "test shared function can access default globals" and
    // "malicious access test"; runtime texts from `fcall f1 0` / `fcall f2 0` on redis-server:
    // "ERR user_function:3: Attempt to modify a readonly table script: f1, ..." and
    // "ERR redis.register_function can only be called on FUNCTION LOAD command script: f2, ...".
    let lua = lua();
    let fs = load(
        &lua,
        "#!lua name=lib1\nlocal lib = redis\nlib.register_function('f1', function() lib.redis = redis end)\nlib.register_function('f2', function() lib.register_function('f1', function() end) end)\nlib.register_function('f3', function() return string.format('%d', 5) .. redis.call() end)\nlib.register_function('f4', function() a = 1 end)",
    )
    .expect("loads");
    let pcall = |f: &Function| -> (bool, Value) {
        let runner: Function = lua
            .load("return function(f) return pcall(f) end")
            .eval()
            .expect("runner");
        runner.call::<(bool, Value)>(f.clone()).expect("pcall")
    };
    let (ok, e) = pcall(&fs[0].callback);
    assert!(!ok);
    assert_eq!(
        e.as_string().map(|s| s.to_string_lossy()),
        Some("user_function:3: Attempt to modify a readonly table".to_string())
    );
    let (ok, e) = pcall(&fs[1].callback);
    assert!(!ok);
    let t = e.as_table().expect("error table");
    assert_eq!(
        t.get::<String>("err").expect("err"),
        "ERR redis.register_function can only be called on FUNCTION LOAD command"
    );
    assert_eq!(fs[2].callback.call::<String>(()).expect("call"), "5called");
    let (ok, e) = pcall(&fs[3].callback);
    assert!(!ok);
    assert_eq!(
        e.as_string().map(|s| s.to_string_lossy()),
        Some("user_function:6: Attempt to modify a readonly table".to_string())
    );
}

#[test]
fn load_timeout() {
    // redis-server: "ERR Error registering functions: ERR FUNCTION LOAD timeout" after 0.50 s
    // for each of these bodies.
    let lua = lua();
    for body in [
        "local a = 1\nwhile true do a = a + 1 end",
        "local function f() local a = 1 while true do a = a + 1 end end\nredis.register_function('f', f)\nf()",
    ] {
        let t = Instant::now();
        assert_eq!(
            load(&lua, &format!("#!lua name=e\n{body}")).map(|f| f.len()),
            Err(format!("{REG}FUNCTION LOAD timeout")),
        );
        let took = t.elapsed();
        assert!(took >= LOAD_TIMEOUT && took < LOAD_TIMEOUT * 4, "{took:?}");
    }
    // The hook is gone afterwards: a 0.7 s loop completes.
    let done: bool = lua
        .load("local t = os.clock() while os.clock() - t < 0.7 do end return true")
        .eval()
        .expect("no timeout outside FUNCTION LOAD");
    assert!(done);
}
