//! Known answers for SHA-512-crypt: Drepper's spec vectors and a libxcrypt fixture.

mod common;

use shardline_auth::sha512_crypt::{
    hash_password, HashFormatError, HashSetting, PasswordHash, Sha512CryptState,
};

/// Every SHA-512 test vector from Drepper, "Unix crypt using SHA-256 and SHA-512", 2008.
const SPEC_VECTORS: &[(&str, &str, &str)] = &[
    (
        "$6$saltstring",
        "Hello world!",
        "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1",
    ),
    (
        "$6$rounds=10000$saltstringsaltstring",
        "Hello world!",
        "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v.",
    ),
    (
        "$6$rounds=5000$toolongsaltstring",
        "This is just a test",
        "$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0",
    ),
    (
        "$6$rounds=1400$anotherlongsaltstring",
        "a very much longer text to encrypt.  This one even stretches over morethan one line.",
        "$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1",
    ),
    (
        "$6$rounds=77777$short",
        "we have a short salt string but not a short password",
        "$6$rounds=77777$short$WuQyW2YR.hBNpjjRhpYD/ifIw05xdfeEyQoMxIXbkvr0gge1a1x3yRULJ5CCaUeOxFmtlcGZelFl5CxtgfiAc0",
    ),
    (
        "$6$rounds=123456$asaltof16chars..",
        "a short string",
        "$6$rounds=123456$asaltof16chars..$BtCwjqMJGx5hrJhZywWvt0RLE8uZ4oPwcelCjmw2kSYu.Ec6ycULevoBK25fs2xXgMNrCzIMVcgEJAstJeonj1",
    ),
    (
        "$6$rounds=10$roundstoolow",
        "the minimum number is still observed",
        "$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX.",
    ),
];

#[test]
fn drepper_spec_vectors() {
    for (setting, password, expected) in SPEC_VECTORS {
        let s = HashSetting::parse(setting).expect("spec setting parses");
        let got = s.hash(password.as_bytes()).to_string();
        assert_eq!(&got, expected, "setting {setting}");
        let parsed = PasswordHash::parse(expected).expect("spec hash parses");
        assert_eq!(&parsed.to_string(), expected);
        assert!(parsed.verify(password.as_bytes()));
        assert!(!parsed.verify(b"wrong"));
    }
}

#[test]
fn resumable_state_gives_same_digest_in_any_step_size() {
    let h = PasswordHash::parse(SPEC_VECTORS[1].2).expect("parses");
    for step in [1u32, 7, 41, 42, 43, 999, 10_000] {
        let mut st: Sha512CryptState = h.start(b"Hello world!");
        assert_eq!(st.rounds(), 10_000);
        let mut calls = 0;
        while !st.run_rounds(step) {
            calls += 1;
        }
        assert_eq!(calls, 10_000u32.div_ceil(step) - 1, "step {step}");
        assert_eq!(st.remaining(), 0);
        assert!(h.matches(&st.finish()), "step {step}");
    }
}

#[test]
fn hash_password_round_trips_with_random_salt() {
    let a = hash_password(b"s3cret\0\xff", 5000);
    let b = hash_password(b"s3cret\0\xff", 5000);
    assert_ne!(a, b, "salts differ");
    assert!(!a.contains("rounds="), "default rounds stay implicit: {a}");
    let pa = PasswordHash::parse(&a).expect("parses");
    assert_eq!(pa.setting().salt().len(), 16);
    assert!(pa.verify(b"s3cret\0\xff"));
    assert!(!pa.verify(b"s3cret"), "bytes after NUL count");
    let c = hash_password(b"x", 1234);
    assert!(c.starts_with("$6$rounds=1234$"), "{c}");
    assert!(PasswordHash::parse(&c).expect("parses").verify(b"x"));
}

#[test]
fn explicit_default_rounds_are_kept_in_output() {
    let explicit = HashSetting::parse("$6$rounds=5000$saltstring").expect("parses");
    let implicit = HashSetting::parse("$6$saltstring").expect("parses");
    let e = explicit.hash(b"Hello world!");
    let i = implicit.hash(b"Hello world!");
    assert!(e.to_string().starts_with("$6$rounds=5000$saltstring$"));
    assert!(i.to_string().starts_with("$6$saltstring$"));
    assert!(e.matches(i.digest()), "same digest either way");
}

#[test]
fn password_hash_parse_refuses_malformed() {
    let good = SPEC_VECTORS[0].2;
    let hash_part = &good[good.len() - 86..];
    let cases: Vec<(String, HashFormatError)> = vec![
        ("$5$saltstring$abc".into(), HashFormatError::NotSha512Crypt),
        ("$6$saltstring".into(), HashFormatError::MissingHash),
        (
            "$6$saltstring$short".into(),
            HashFormatError::BadHash("not 86 characters"),
        ),
        (
            format!("$6$rounds=05000$salt${hash_part}"),
            HashFormatError::NonCanonicalRounds("05000".into()),
        ),
        (
            format!("$6$rounds=10$salt${hash_part}"),
            HashFormatError::NonCanonicalRounds("10".into()),
        ),
        (
            format!("$6$rounds=x$salt${hash_part}"),
            HashFormatError::BadRounds,
        ),
        (
            format!("$6$saltstringsaltstring${hash_part}"),
            HashFormatError::SaltTooLong,
        ),
        (
            format!("$6$salt:x${hash_part}"),
            HashFormatError::BadSaltChar(':'),
        ),
    ];
    for (text, err) in cases {
        assert_eq!(PasswordHash::parse(&text).map(|_| ()), Err(err), "{text}");
    }
}

/// What we answer where libxcrypt refuses a setting (`*0`): the spec's clamping, or an error.
fn expected_for_refused(setting: &str) -> Result<u32, ()> {
    let form = setting
        .trim_start_matches("$6$")
        .split('$')
        .next()
        .unwrap_or("");
    match form {
        "rounds=05000" => Ok(5000),
        "rounds=01000" | "rounds=10" | "rounds=999" | "rounds=0" | "rounds=1" => Ok(1000),
        "rounds=1000000000" | "rounds=4294967296" | "rounds=99999999999999999999999" => {
            Ok(999_999_999)
        }
        _ => Err(()),
    }
}

#[test]
fn libxcrypt_fixture() {
    let text = include_str!("fixtures/libxcrypt_sha512.txt");
    let (mut hashed, mut refused) = (0, 0);
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "line {}", n + 1);
        let (input, seen, setting, result) = (common::unhex(f[0]), common::unhex(f[1]), f[2], f[3]);
        if result.starts_with("$6$") {
            let s = HashSetting::parse(setting).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
            let ours = s.hash(&seen);
            assert_eq!(ours.to_string(), result, "line {}", n + 1);
            let stored =
                PasswordHash::parse(result).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
            assert_eq!(stored.to_string(), result);
            assert!(stored.verify(&seen));
            if input != seen {
                assert!(
                    !stored.verify(&input),
                    "line {}: our byte API must not stop at NUL",
                    n + 1
                );
            }
            hashed += 1;
        } else if result == "!" {
            // Valid but too costly to compute in a test: check the setting only.
            let s = HashSetting::parse(setting).expect("cap parses");
            assert_eq!(s.rounds(), 999_999_999);
        } else {
            assert!(result.starts_with('*'), "line {}: {result}", n + 1);
            match (expected_for_refused(setting), HashSetting::parse(setting)) {
                (Ok(r), Ok(s)) => {
                    assert_eq!(s.rounds(), r, "line {}", n + 1);
                    assert!(s.rounds_explicit());
                }
                (Err(()), Err(_)) => {}
                (want, got) => panic!("line {}: {setting}: want {want:?}, got {got:?}", n + 1),
            }
            refused += 1;
        }
    }
    assert!(hashed >= 200, "only {hashed} hashes checked");
    assert_eq!(refused, 14);
}

#[test]
fn clamped_rounds_match_libxcrypt_canonical_answer() {
    // libxcrypt refuses rounds=10 but answers rounds=1000; the spec clamps 10 to 1000.
    let clamped = HashSetting::parse("$6$rounds=10$saltstring")
        .expect("parses")
        .hash(b"pw");
    let canonical = HashSetting::parse("$6$rounds=1000$saltstring")
        .expect("parses")
        .hash(b"pw");
    assert_eq!(clamped.to_string(), canonical.to_string());
    assert!(clamped
        .to_string()
        .starts_with("$6$rounds=1000$saltstring$"));
}
