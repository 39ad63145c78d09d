use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use super::*;

const FIXTURE: &str = include_str!("../../tests/fixtures/users_tools.txt");

fn line_err(text: &str, limits: &UsersLimits) -> (usize, LineError) {
    match Users::parse(Path::new("u.txt"), text, limits) {
        Err(UsersFileError::Line { line, reason, .. }) => (line, reason),
        other => panic!("expected a line error, got {other:?}"),
    }
}

#[test]
fn tool_made_hashes_load_and_verify() {
    let users = Users::parse(
        Path::new("users_tools.txt"),
        FIXTURE,
        &UsersLimits::default(),
    )
    .expect("loads");
    assert_eq!(users.len(), 3);
    assert!(users.get(b"alice").expect("alice").verify(b"mkpasswd-pw"));
    assert!(users.get(b"bob").expect("bob").verify(b"openssl-pw"));
    let carol = users.get(b"carol").expect("carol");
    assert_eq!(carol.rounds(), 10_000);
    assert!(carol.verify(b"rounds-pw"));
    assert!(!carol.verify(b"mkpasswd-pw"));
    assert!(users.get(b"dave").is_none());
    // Two of three users use the default cost, so the dummy does too.
    assert_eq!(users.dummy_hash().rounds(), 5000);
    assert!(!users.dummy_hash().verify(b""));
}

#[test]
fn refuses_bad_lines_with_line_numbers() {
    let limits = UsersLimits::default();
    let alice = FIXTURE
        .lines()
        .find(|l| l.starts_with("alice:"))
        .expect("alice line");
    assert_eq!(
        line_err("# c\n\nnocolon\n", &limits),
        (3, LineError::MissingColon)
    );
    assert_eq!(line_err(":$6$x$y\n", &limits), (1, LineError::BadName));
    assert!(matches!(
        line_err("a:$1$abc$def\n", &limits),
        (1, LineError::BadHash(HashFormatError::NotSha512Crypt))
    ));
    let dup = format!("{alice}\n#\n{alice}\n");
    assert_eq!(
        line_err(&dup, &limits),
        (3, LineError::Duplicate { first_line: 1 })
    );
    let carol = FIXTURE
        .lines()
        .find(|l| l.starts_with("carol:"))
        .expect("carol line");
    let low = UsersLimits {
        max_hash_rounds: 9999,
    };
    assert_eq!(
        line_err(carol, &low),
        (
            1,
            LineError::TooManyRounds {
                rounds: 10_000,
                max: 9999
            }
        )
    );
    let msg = Users::parse(Path::new("u.txt"), carol, &low)
        .expect_err("refused")
        .to_string();
    assert_eq!(
        msg,
        "u.txt:1: hash uses 10000 rounds, more than the maximum 9999 (--max-hash-rounds)"
    );
}

#[test]
fn generations_increase_per_load() {
    let a = Users::parse(Path::new("x"), "", &UsersLimits::default()).expect("empty ok");
    let b = Users::parse(Path::new("x"), "", &UsersLimits::default()).expect("empty ok");
    assert!(a.is_empty());
    assert!(b.generation() > a.generation());
    assert_eq!(a.dummy_hash().rounds(), 5000);
}

#[test]
fn set_password_creates_replaces_and_keeps_comments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users");
    set_user_password(&path, "alice", b"one", 1000).expect("create");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut text = std::fs::read_to_string(&path).expect("read");
    text = format!("# header\n{text}\n# trailer\n");
    std::fs::write(&path, &text).expect("write");
    set_user_password(&path, "bob", b"two", 1000).expect("append");
    set_user_password(&path, "alice", b"three", 1000).expect("replace");
    let text = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "# header");
    assert!(lines[1].starts_with("alice:$6$rounds=1000$"));
    assert_eq!(lines[2], "");
    assert_eq!(lines[3], "# trailer");
    assert!(lines[4].starts_with("bob:$6$rounds=1000$"));
    let users = Users::load(&path, &UsersLimits::default()).expect("load");
    assert!(users.get(b"alice").expect("alice").verify(b"three"));
    assert!(users.get(b"bob").expect("bob").verify(b"two"));
    assert!(users.warnings().is_empty());
    assert!(matches!(
        set_user_password(&path, "a:b", b"x", 1000),
        Err(UsersFileError::BadUserName(_))
    ));
}

#[test]
fn set_password_in_a_missing_directory_names_the_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nodir");
    let err = set_user_password(&missing.join("users"), "alice", b"pw", 1000).expect_err("no dir");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: No such file or directory (os error 2)",
            missing.display()
        )
    );
}

#[test]
fn set_password_through_a_symlink_edits_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real_users");
    let link = dir.path().join("users");
    set_user_password(&real, "alice", b"one", 1000).expect("create");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    set_user_password(&link, "bob", b"two", 1000).expect("through the link");
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&real).expect("read");
    assert!(
        text.starts_with("alice:$6$") && text.contains("\nbob:$6$"),
        "{text}"
    );
}

#[test]
fn set_password_refuses_what_is_not_a_regular_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for path in [Path::new("/dev/null"), fifo.as_path(), dir.path()] {
        let err = set_user_password(path, "bob", b"two", 1000).expect_err("refused");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a regular file; a users file must be one, and it is not replaced",
                path.display()
            )
        );
    }
    assert!(std::fs::metadata("/dev/null")
        .expect("/dev/null")
        .file_type()
        .is_char_device());
}

#[test]
fn set_password_keeps_the_mode_of_an_existing_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users");
    set_user_password(&path, "alice", b"one", 1000).expect("create");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    set_user_password(&path, "bob", b"two", 1000).expect("append");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
}

#[test]
fn warns_when_readable_by_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users");
    std::fs::write(&path, FIXTURE).expect("write");
    let warnings_at = |mode: u32| {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let users = Users::load(&path, &UsersLimits::default()).expect("load");
        users.warnings().to_vec()
    };
    let loose = |mode: u32| {
        vec![UsersWarning::ReadableByOthers {
            path: path.clone(),
            mode,
        }]
    };
    // Readable by others: warned.
    assert_eq!(warnings_at(0o644), loose(0o644));
    // Group-readable, for the service's group: no warning.
    assert_eq!(warnings_at(0o640), vec![]);
    // Writable by the group: warned.
    assert_eq!(warnings_at(0o660), loose(0o660));
    let missing = Users::load(&dir.path().join("nope"), &UsersLimits::default());
    assert!(matches!(missing, Err(UsersFileError::Io { .. })));
}

#[test]
fn a_file_without_users_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users");
    for text in ["", "\n\n", "# only a comment\n   \n"] {
        std::fs::write(&path, text).expect("write");
        let err = Users::load(&path, &UsersLimits::default()).expect_err("no users");
        assert!(matches!(err, UsersFileError::NoUsers { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no users (only blank or comment lines); add one with `shardline passwd USER`",
                path.display()
            )
        );
    }
}

#[test]
fn default_alone_may_be_nopass() {
    let limits = UsersLimits::default();
    let users =
        Users::parse(Path::new("u"), "default:nopass\n", &limits).expect("nopass default loads");
    assert!(users.default_nopass());
    assert!(users.get(b"default").is_none());
    assert_eq!(users.len(), 1);
    assert!(!users.is_empty());
    assert_eq!(
        line_err("alice:nopass\n", &limits),
        (1, LineError::NopassNotDefault)
    );
    assert_eq!(
        line_err("default:nopass\ndefault:nopass\n", &limits),
        (2, LineError::Duplicate { first_line: 1 })
    );
    let alice = FIXTURE
        .lines()
        .find(|l| l.starts_with("alice:"))
        .expect("alice line");
    let users = Users::parse(Path::new("u"), &format!("{alice}\n"), &limits).expect("loads");
    assert!(!users.default_nopass());
}
