//! Expected payloads are `FUNCTION DUMP` replies of redis-server 7.0.15 (port 6420) after
//! `FUNCTION FLUSH` + `FUNCTION LOAD` of the `testdata/*.lua` codes, saved as hex; expected
//! errors are its `FUNCTION RESTORE` replies to the payloads built here (same bytes, sent
//! from a Python client).

use super::super::library::register;
use super::*;
use mlua::Lua;

fn hex(s: &str) -> Vec<u8> {
    let s = s.trim();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A loader running the code in a fresh Lua state, as a shard would.
fn lua_loader(lua: &Lua) -> impl FnMut(&[u8], &Metadata) -> Result<Registration, String> + '_ {
    move |code, meta| {
        let fs = register(lua, code, meta)?;
        Ok(Registration::new(
            Bytes::copy_from_slice(code),
            meta.clone(),
            fs.iter().map(|f| f.info()).collect(),
        ))
    }
}

fn libs_of(codes: &[&[u8]]) -> Libraries {
    let lua = Lua::new();
    let mut loader = lua_loader(&lua);
    let mut libs = Libraries::new();
    for code in codes {
        let meta = Metadata::parse(code).expect("metadata");
        let reg = loader(code, &meta).expect("loads");
        libs.load(reg, false).expect("links");
    }
    libs
}

const A: &[u8] = include_bytes!("testdata/a.lua");
const LIB1: &[u8] = include_bytes!("testdata/lib1.lua");
const BIG: &[u8] = include_bytes!("testdata/big.lua");

#[test]
fn dump_matches_redis_bytes() {
    // 55 bytes that LZF cannot shrink by 4: stored raw.
    assert_eq!(
        dump(&libs_of(&[A])).to_vec(),
        hex(include_str!("testdata/a.hex"))
    );
    // 180 bytes, LZF-compressed (0xC3, 14-bit compressed length, original length).
    assert_eq!(
        dump(&libs_of(&[LIB1])).to_vec(),
        hex(include_str!("testdata/lib1.hex"))
    );
    // 27805 bytes: 32-bit original length, long back references.
    assert_eq!(
        dump(&libs_of(&[BIG])).to_vec(),
        hex(include_str!("testdata/big.hex"))
    );
    // Two libraries (Redis happened to emit them in name order).
    assert_eq!(
        dump(&libs_of(&[LIB1, A])).to_vec(),
        hex(include_str!("testdata/a_lib1.hex"))
    );
    // No library: version and CRC only.
    let empty = dump(&Libraries::new());
    assert_eq!(&empty[..2], b"\x0a\x00");
    assert_eq!(empty.len(), 10);
}

#[test]
fn restore_reads_redis_payloads() {
    let lua = Lua::new();
    for (file, names) in [
        (include_str!("testdata/a.hex"), vec!["a"]),
        (include_str!("testdata/big.hex"), vec!["big"]),
        (include_str!("testdata/a_lib1.hex"), vec!["a", "lib1"]),
    ] {
        let mut libs = Libraries::new();
        restore(
            &mut libs,
            &hex(file),
            RestorePolicy::Append,
            lua_loader(&lua),
        )
        .expect("restores");
        let got: Vec<_> = libs.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(got, names);
        assert_eq!(dump(&libs).to_vec(), hex(file));
    }
    let mut libs = Libraries::new();
    restore(
        &mut libs,
        &hex(include_str!("testdata/big.hex")),
        RestorePolicy::Append,
        lua_loader(&lua),
    )
    .expect("restores");
    assert_eq!(libs.functions_count(), 300);
    assert_eq!(libs.library("big").map(|l| l.code.as_ref()), Some(BIG));
}

/// `body` + RDB version + CRC, like Python's `crc.payload` used against redis-server.
fn payload(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let c = CRC64.checksum(&p);
    p.extend_from_slice(&c.to_le_bytes());
    p
}

fn s(b: &[u8]) -> Vec<u8> {
    let mut v = vec![b.len() as u8];
    v.extend_from_slice(b);
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn restore_new(p: &[u8]) -> Result<Vec<String>, String> {
    let lua = Lua::new();
    let mut libs = Libraries::new();
    restore(&mut libs, p, RestorePolicy::Append, lua_loader(&lua))?;
    Ok(libs.iter().map(|l| l.name.clone()).collect())
}

#[test]
fn restore_errors_match_redis() {
    let ok = cat(&[b"\xf5", &s(A)]);
    let bad = "ERR DUMP payload version or checksum are wrong";
    assert_eq!(restore_new(&payload(b"", 10)), Ok(vec![]));
    assert_eq!(restore_new(&payload(&ok, 10)), Ok(vec!["a".to_string()]));
    assert_eq!(restore_new(&payload(&ok, 9)), Ok(vec!["a".to_string()]));
    assert_eq!(restore_new(&payload(&ok, 0)), Ok(vec!["a".to_string()]));
    assert_eq!(restore_new(&payload(&ok, 11)), Err(bad.to_string()));
    let mut crc_bad = payload(&ok, 10);
    *crc_bad.last_mut().expect("non-empty") = 0;
    assert_eq!(restore_new(&crc_bad), Err(bad.to_string()));
    assert_eq!(restore_new(b"123456789"), Err(bad.to_string()));
    assert_eq!(restore_new(b""), Err(bad.to_string()));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (cat(&[b"\x00", &s(A)]), "ERR given type is not a function"),
        (b"\xff".to_vec(), "ERR given type is not a function"),
        (
            cat(&[b"\xf5\x3c", &A[..30]]),
            "ERR Failed loading library payload",
        ),
        (b"\xf5".to_vec(), "ERR Failed loading library payload"),
        (b"\xf5\xc4".to_vec(), "ERR Failed loading library payload"),
        (
            cat(&[b"\xf5\x81", &(1u64 << 62).to_be_bytes(), A]),
            "ERR Failed loading library payload",
        ),
        (
            b"\xf5\xc3\x05\x30\x04abcde".to_vec(),
            "ERR Failed loading library payload",
        ),
        // Integer-encoded strings are read ("5", "261") and then fail as library code.
        (b"\xf5\xc0\x05".to_vec(), "ERR Missing library metadata"),
        (b"\xf5\xc1\x05\x01".to_vec(), "ERR Missing library metadata"),
        (
            b"\xf5\xc2\x05\x01\x00\x00".to_vec(),
            "ERR Missing library metadata",
        ),
        (
            cat(&[b"\xf5", &s(b"hello")]),
            "ERR Missing library metadata",
        ),
        (
            cat(&[b"\xf5", &s(A), b"\xf5", &s(A)]),
            "ERR Library 'a' already exists",
        ),
        (
            cat(&[b"\xf5", &s(b"#!lua name=b\nthis is bad")]),
            "ERR Error compiling function: user_function:2: '=' expected near 'is'",
        ),
        // A string running 5 bytes into the footer: its end is the version and CRC bytes.
        (
            cat(&[b"\xf5", &[A.len() as u8 + 5], A]),
            "ERR Error compiling function: user_function:3: unexpected symbol",
        ),
        // Pre-GA (7.0 RC) records.
        (b"\xf6".to_vec(), "ERR Failed loading library name"),
        (cat(&[b"\xf6", &s(b"x")]), "ERR Failed loading engine name"),
        (
            cat(&[b"\xf6", &s(b"x"), &s(b"LUA")]),
            "ERR Failed loading library blob",
        ),
        (
            cat(&[b"\xf6", &s(b"x"), &s(b"LUA"), b"\x01"]),
            "ERR Failed loading library description",
        ),
        (
            cat(&[b"\xf6", &s(b"x"), &s(b"LUA"), b"\x00"]),
            "ERR Failed loading library blob",
        ),
        (
            cat(&[
                b"\xf6",
                &s(b"x y"),
                &s(b"LUA"),
                b"\x00",
                &s(b"redis.register_function('f', function() end)"),
            ]),
            "ERR Invalid metadata value given: y",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            restore_new(&payload(&body, 10)),
            Err(want.to_string()),
            "{body:02x?}"
        );
    }
    // A 30-byte LZF record truncated before the footer reads as the footer bytes.
    let length_only = cat(&[b"\xf5\x40"]);
    assert!(restore_new(&payload(&length_only, 10)).is_err());
}

#[test]
fn restore_pre_ga_builds_the_ga_payload() {
    // redis-server lists the restored library with code "#!LUA name=x\n<body>".
    let body = b"redis.register_function('f', function() end)";
    let lua = Lua::new();
    for (engine, desc) in [(&b"LUA"[..], &b"\x00"[..]), (b"lua", b"\x01\x09some desc")] {
        let p = payload(&cat(&[b"\xf6", &s(b"x"), &s(engine), desc, &s(body)]), 10);
        let mut libs = Libraries::new();
        restore(&mut libs, &p, RestorePolicy::Append, lua_loader(&lua)).expect("restores");
        let mut want = b"#!".to_vec();
        want.extend_from_slice(engine);
        want.extend_from_slice(b" name=x\n");
        want.extend_from_slice(body);
        assert_eq!(libs.library("x").map(|l| l.code.to_vec()), Some(want));
    }
}

#[test]
fn restore_policies() {
    // functions.tcl "dump and restore with append/replace/flush argument" and
    // "restore with function name collision".
    let lua = Lua::new();
    let test_hello = b"#!lua name=test\nredis.register_function('test', function(KEYS, ARGV)\n return 'hello' \nend)";
    let test_hello1 = b"#!lua name=test\nredis.register_function('test', function(KEYS, ARGV)\n return 'hello1' \nend)";
    let test1 = b"#!lua name=test1\nredis.register_function('test1', function(KEYS, ARGV)\n return 'hello1' \nend)";
    let p = dump(&libs_of(&[test_hello]));

    let mut libs = libs_of(&[test_hello1]);
    let v = libs.version();
    assert_eq!(
        restore(&mut libs, &p, RestorePolicy::Append, lua_loader(&lua)),
        Err("ERR Library test already exists".to_string())
    );
    assert_eq!(libs.version(), v);
    restore(&mut libs, &p, RestorePolicy::Replace, lua_loader(&lua)).expect("replace");
    assert_eq!(
        libs.library("test").map(|l| l.code.as_ref()),
        Some(&test_hello[..])
    );
    assert!(libs.version() > v);

    let mut libs = libs_of(&[test1]);
    restore(&mut libs, &p, RestorePolicy::Append, lua_loader(&lua)).expect("append");
    assert_eq!(libs.libraries_count(), 2);
    restore(&mut libs, &p, RestorePolicy::Flush, lua_loader(&lua)).expect("flush");
    let names: Vec<_> = libs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["test"]);

    // A bad payload leaves the libraries alone.
    assert_eq!(
        restore(
            &mut libs,
            b"bad_payload",
            RestorePolicy::Flush,
            lua_loader(&lua)
        ),
        Err("ERR DUMP payload version or checksum are wrong".to_string())
    );
    assert_eq!(libs.libraries_count(), 1);

    assert_eq!(RestorePolicy::parse(b"FlUsH"), Ok(RestorePolicy::Flush));
    assert_eq!(RestorePolicy::parse(b"append"), Ok(RestorePolicy::Append));
    assert_eq!(RestorePolicy::parse(b"REPLACE"), Ok(RestorePolicy::Replace));
    assert_eq!(
        RestorePolicy::parse(b"foo"),
        Err(
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                .to_string()
        )
    );
}

#[test]
fn arbitrary_payloads_never_panic() {
    // Every prefix and single-byte mutation of real payloads, with valid CRCs.
    let lua = Lua::new();
    let real = hex(include_str!("testdata/lib1.hex"));
    let body = &real[..real.len() - 10];
    for cut in 0..body.len() {
        let _ = parse(&payload(&body[..cut], 10), lua_loader(&lua));
    }
    for i in 0..body.len() {
        for x in [0u8, 0x3f, 0x40, 0x80, 0x81, 0xc3, 0xff] {
            let mut b = body.to_vec();
            b[i] = x;
            let _ = parse(&payload(&b, 10), lua_loader(&lua));
        }
    }
}
