#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/corpus/<target>/<name>, from the lists below.

Seeds are small readable inputs that reach each parser's main paths and errors; the fuzzer
grows its working corpus from them (fuzz/run.sh keeps that copy out of the repository).
Hashes come from `mkpasswd -m sha-512 [-R N] -S SALT PASSWORD` and `openssl passwd -6`.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

ALICE = "$6$og6KaYNhFkIS0Qmf$/1mkKKF1kbF.klPNS2tnwLKcyuzhpw89Pdp.UeuuXxNJ0G9S7BpXn3KOadF4TLB4J/YDGKe3clFayKgUt1b221"
BOB = "$6$UZALksCcmP2hYFlQ$XPQBbF6kyaWzNUeLQts0g1.rF4zuozxUUQ1ZLeLP2MKNxvoCsBLqG2/oS9fKrhJIFnBfaCFfIFjjzCiHELnPs1"
CAROL = "$6$rounds=10000$4xHtlV13dPk1N2ug$4NRTmG67nogw.0M6m/mo.wGJY.dbXCvX2kv0/Eu./8fSPay8upJvOeSYv3Hm2RIxnuckaX5WceK9zCi1Q.mPi0"
R1000 = "$6$rounds=1000$saltsaltsalt1234$zjqM.Nrt0hnB1ownayfLMVIo8a4EuAJxC0IRuig6ZzxfWz1Q/NgeT54tvgS603Kk0tZqPhSKH8cunPMwCS5JV/"
DIGEST = ALICE.rsplit("$", 1)[1]


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


# Byte 0 picks the limits (0 authenticated, 1 unauthenticated, 2/3 tiny), byte 1 the read sizes.
RESP = {
    "get": b"\x00\x07" + resp("GET", "k"),
    "set_binary": b"\x00\x01" + resp("SET", "key", b"a\r\nb\x00"),
    "pipeline": b"\x00\x33" + resp("PING") + resp("ECHO", "x") + b"PING\r\n",
    "inline_quotes": b"\x00\x05SET k \"a\\x41\\n\" 'it\\'s'\r\n",
    "inline_lf_only": b"\x00\x09PING\nECHO a b c\n",
    "empty_requests": b"\x00\x02\r\n\n   \r\n*-1\r\n*0\r\nPING\r\n",
    "partial_bulk": b"\x00\x10*2\r\n$3\r\nGET\r\n$10\r\nabc",
    "unbalanced": b"\x00\x00SET \"a\r\n",
    "quote_then_char": b"\x00\x00SET 'a'b\r\n",
    "bad_multibulk_len": b"\x00\x00*x\r\n",
    "huge_multibulk_len": b"\x00\x00*2147483648\r\n",
    "expected_dollar": b"\x00\x00*1\r\nx3\r\nGET\r\n",
    "negative_bulk": b"\x00\x00*1\r\n$-1\r\n",
    "leading_zero": b"\x00\x00*1\r\n$01\r\na\r\n",
    "unchecked_crlf": b"\x00\x04*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n",
    "unauth_args": b"\x01\x00*11\r\n",
    "unauth_bulk": b"\x01\x00" + b"*2\r\n$4\r\nAUTH\r\n$16385\r\n",
    "unauth_ok": b"\x01\x08" + resp("AUTH", "user", "pass"),
    "tight_inline": b"\x02\x03" + b"a" * 20 + b"\r\n",
    "tight_args": b"\x02\x03" + resp("a", "b", "c", "d"),
    "tight_bulk": b"\x03\x03" + resp("123456789"),
    "nul_inline": b"\x00\x00PING\x00junk\r\n",
}

COMMANDS = {
    "strings": resp("SET", "k", "v") + resp("GET", "k") + resp("APPEND", "k", "xyz")
    + resp("GETRANGE", "k", "0", "-2") + resp("SETRANGE", "k", "10", "z") + resp("STRLEN", "k"),
    "set_options": resp("SET", "k", "v", "NX", "PX", "100") + resp("SET", "k", "w", "XX", "KEEPTTL", "GET")
    + resp("GETEX", "k", "PERSIST") + resp("GETDEL", "k"),
    "incr": b"INCR n\r\nINCRBY n 9223372036854775806\r\nDECRBY n -5\r\nINCRBYFLOAT f 1.5e3\r\nINCRBYFLOAT f -inf\r\n",
    "expire": resp("SET", "k", "v") + resp("EXPIRE", "k", "1", "NX") + resp("TTL", "k") + resp("PTTL", "k")
    + resp("PEXPIREAT", "k", "1700000000500") + resp("EXPIRETIME", "k") + resp("PERSIST", "k")
    + resp("GET", "k") + resp("SETEX", "j", "1", "v") + resp("PSETEX", "i", "9223372036854775807", "v"),
    "keys_scan": b"MSET a 1 b 2 {t}c 3\r\nKEYS *\r\nKEYS [a-b]?\r\nSCAN 0 MATCH * COUNT 2 TYPE string\r\nDBSIZE\r\nEXISTS a a z\r\nTYPE a\r\nDEL a b\r\nFLUSHALL\r\n",
    "lists": resp("RPUSH", "l", "a", "b", "c", "a") + resp("LPUSH", "l", "z") + resp("LRANGE", "l", "0", "-1")
    + resp("LPOS", "l", "a", "RANK", "-1", "COUNT", "0", "MAXLEN", "10") + resp("LINSERT", "l", "BEFORE", "b", "y")
    + resp("LREM", "l", "-1", "a") + resp("LSET", "l", "0", "q") + resp("LTRIM", "l", "1", "-2")
    + resp("LINDEX", "l", "-1") + resp("LPOP", "l", "2") + resp("RPOPLPUSH", "l", "m") + resp("LLEN", "l"),
    "hashes": resp("HSET", "h", "f", "1", "g", "2") + resp("HINCRBY", "h", "f", "41") + resp("HINCRBYFLOAT", "h", "g", "0.1")
    + resp("HGETALL", "h") + resp("HMGET", "h", "f", "x") + resp("HSETNX", "h", "f", "9") + resp("HSTRLEN", "h", "f")
    + resp("HDEL", "h", "f", "g") + resp("HLEN", "h"),
    "sets": resp("SADD", "s", "a", "b", "c") + resp("SISMEMBER", "s", "a") + resp("SMISMEMBER", "s", "a", "z")
    + resp("SRANDMEMBER", "s", "-5") + resp("SRANDMEMBER", "s", "2") + resp("SPOP", "s", "2") + resp("SMEMBERS", "s")
    + resp("SREM", "s", "a") + resp("SCARD", "s"),
    "wrongtype": b"SET k v\r\nLPUSH k a\r\nHGET k f\r\nSADD k m\r\nINCR k\r\n",
    "errors": b"GET\r\nNOSUCH a b\r\nSET k v EX 0\r\nSETRANGE k -1 x\r\nSETRANGE k 536870912 x\r\nSRANDMEMBER s -9223372036854775808\r\nAUTH x\r\n",
    "inline_protocol_error": b"SET a b\r\nSET \"a\r\nGET a\r\n",
}

USERS = {
    "tools": open(os.path.join(HERE, "../auth/tests/fixtures/users_tools.txt")).read(),
    "one_user": f"alice:{ALICE}\n",
    "crlf_and_spaces": f"  alice:{ALICE}  \r\n\r\n# c\r\nbob:{BOB}\r\n",
    "rounds": f"carol:{CAROL}\nr:{R1000}\n",
    "empty": "",
    "comments_only": "# nobody\n\n   # indented\n",
    "duplicate": f"alice:{ALICE}\nalice:{BOB}\n",
    "no_colon": "alice\n",
    "bad_name": f"al ice:{ALICE}\n:{ALICE}\n",
    "too_many_rounds": f"x:$6$rounds=1000001$salt${DIGEST}\n",
    "md5": "x:$1$abc$def\n",
    "colon_in_hash": f"x:{ALICE}:extra\n",
}

CRYPT = {
    "default_rounds": ALICE,
    "openssl": BOB,
    "rounds": CAROL,
    "rounds_min": R1000,
    "setting_only": "$6$saltsalt",
    "setting_rounds": "$6$rounds=77$short$",
    "rounds_clamped_high": "$6$rounds=99999999999999999999$x$",
    "rounds_leading_zero": f"$6$rounds=01000$salt${DIGEST}",
    "rounds_no_digits": "$6$rounds=$salt$",
    "empty_salt": f"$6$${DIGEST}",
    "long_salt": f"$6$0123456789abcdefXYZ${DIGEST}",
    "bad_salt_char": f"$6$sa;t${DIGEST}",
    "short_hash": "$6$salt$abc",
    "bad_last_char": f"$6$salt${DIGEST[:-1]}z",
    "not_sha512": "$5$salt$hash",
    "missing_hash": "$6$rounds=5000$salt",
}

# DUMP payload bodies (footer removed) that redis-server 7.0.15 wrote, and malformed ones.
DUMP = {name: bytes.fromhex(h) for name, h in {
    "string": "000568656c6c6f",
    "int16": "00c13930",
    "lzf_string": "00c3093c016161e02f00016161",
    "quicklist_lzf": "120102c33640751f750000000a008161028162020101df9c02f240420f04cfff02d00002f270110106"
    "04f400f2052a0120250309e04678e03c000148ff",
    "quicklist_small": "1201020f0f00000003008161020101dfff02ff",
    "hash_listpack": "1012120000000400816602817602816e020701ff",
    "hash_plain_lzf": "04010166c3094041017676e03400017676",
    "intset32": "0b1c0400000005000000fbffffff010000000200000003000000701101",
    "intset64": "0b180800000002000000010000000000000000f2052a01000000",
    "set_plain": "020201610162",
    "list_plain": "0102016101c0ff",
    "zset_unsupported": "050101610000000000000000f03f",
    "count_past_end": "0280ffffffff",
    "lzf_huge_claim": "00c302ff0001",
    "listpack_bad_total": "10037f0000",
}.items()}


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())


write("resp_parser", RESP)
write("command_loop", COMMANDS)
write("users_file", USERS)
write("sha512_crypt_format", CRYPT)
write("dump_payload", DUMP)
