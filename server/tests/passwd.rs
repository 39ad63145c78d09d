//! `shardline passwd` on an existing users file: it keeps the file's owner, group and mode,
//! refuses rounds and files the server would refuse at load (with the server's words), and
//! without `--users` names the file it looked for.

mod common;

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::shardline_passwd;

/// uid and gid of `nobody`/`nogroup` on Debian: an owner that is not the test's user.
const NOBODY: u32 = 65534;

/// Runs `shardline passwd USER --users USERS EXTRA…` with `password` and a newline on stdin.
fn passwd(users: &Path, user: &str, password: &str, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&OsStr> = vec![user.as_ref(), "--users".as_ref(), users.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    let stdin = format!("{password}\n");
    shardline_passwd(&args, Path::new("."), stdin.as_bytes())
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim_end().to_string()
}

#[test]
fn passwd_keeps_the_owner_group_and_mode_of_the_users_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    let out = passwd(&users, "alice", "one", &["--rounds", "1000"]);
    assert!(out.status.success(), "{out:?}");
    // A new file is private to its creator.
    let meta = std::fs::metadata(&users).expect("users");
    assert_eq!(meta.mode() & 0o7777, 0o600);

    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let as_root = unsafe { libc::geteuid() } == 0;
    if as_root {
        std::os::unix::fs::chown(&users, Some(NOBODY), Some(NOBODY)).expect("chown");
    } else {
        eprintln!("not root: the owner and group part of this test is skipped (CI runs as root)");
    }
    let before = std::fs::metadata(&users).expect("users");
    let alice = std::fs::read_to_string(&users).expect("users");

    let out = passwd(&users, "bob", "two", &["--rounds", "1000"]);
    assert!(out.status.success(), "{out:?}");
    let after = std::fs::metadata(&users).expect("users");
    assert_ne!(
        after.ino(),
        before.ino(),
        "the file is replaced by a rename"
    );
    assert_eq!(after.mode() & 0o7777, 0o640);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    if as_root {
        assert_eq!((after.uid(), after.gid()), (NOBODY, NOBODY));
    }
    let text = std::fs::read_to_string(&users).expect("users");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(format!("{}\n", lines[0]), alice);
    assert!(lines[1].starts_with("bob:$6$rounds=1000$"), "{text}");
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
}

#[test]
fn passwd_refuses_rounds_the_server_would_refuse_at_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    let out = passwd(&users, "alice", "one", &["--rounds", "5000"]);
    assert!(out.status.success(), "{out:?}");
    let original = std::fs::read(&users).expect("users");

    // Above the default --max-hash-rounds (1000000): refused, nothing written.
    let out = passwd(&users, "bob", "two", &["--rounds", "2000000"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let refusal = "hash uses 2000000 rounds, more than the maximum 1000000 (--max-hash-rounds)";
    assert_eq!(stderr(&out), format!("shardline: {refusal}"));
    assert_eq!(std::fs::read(&users).expect("users"), original);

    // A lower limit, given as the server takes it: the same text as the server's refusal of
    // the file at load.
    let out = passwd(&users, "bob", "two", &["--max-hash-rounds", "4000"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let refusal = "hash uses 5000 rounds, more than the maximum 4000 (--max-hash-rounds)";
    assert_eq!(stderr(&out), format!("shardline: {refusal}"));
    assert_eq!(std::fs::read(&users).expect("users"), original);
    let server_err = common::start_failure(dir.path(), &["--max-hash-rounds", "4000"]);
    assert!(
        server_err.contains(&format!("{}:1: {refusal}", users.display())),
        "{server_err}"
    );

    // The file is checked as the server loads it: alice's 5000 rounds are over 4000, so a
    // bob within the limit would still leave a file the server refuses.
    let out = passwd(
        &users,
        "bob",
        "two",
        &["--max-hash-rounds", "4000", "--rounds", "4000"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stderr(&out),
        format!("shardline: {}:1: {refusal}", users.display())
    );
    assert_eq!(std::fs::read(&users).expect("users"), original);

    // Exactly the limit is accepted.
    let fresh = dir.path().join("fresh");
    let out = passwd(
        &fresh,
        "bob",
        "two",
        &["--max-hash-rounds", "4000", "--rounds", "4000"],
    );
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&fresh).expect("users");
    assert!(text.starts_with("bob:$6$rounds=4000$"), "{text}");
}

#[test]
fn passwd_refuses_a_users_file_the_server_would_refuse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    assert!(passwd(&users, "alice", "one", &[]).status.success());
    let mut text = std::fs::read_to_string(&users).expect("users");
    text.push_str("broken line\n");
    std::fs::write(&users, &text).expect("write");
    let out = passwd(&users, "gina", "two", &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let refusal = format!("{}:2: expected name:$6$hash", users.display());
    assert_eq!(stderr(&out), format!("shardline: {refusal}"));
    assert_eq!(std::fs::read_to_string(&users).expect("users"), text);
    let server_err = common::start_failure(dir.path(), &[]);
    assert!(server_err.contains(&refusal), "{server_err}");
}

#[test]
fn passwd_without_a_data_dir_names_the_file_it_looked_for() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = shardline_passwd(&["alice".as_ref()], cwd.path(), b"secret\n");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let looked_for = cwd.path().join("shardline-data").join("users");
    assert_eq!(
        stderr(&out),
        format!(
            "shardline: no users file at {} (No such file or directory (os error 2)); without \
             --users, passwd edits the users file in --data-dir (./shardline-data). Run the \
             server once to create it (`shardline --data-dir DIR` writes DIR/users), pass the \
             server's --data-dir, or pass --users FILE (created if missing)",
            looked_for.display()
        )
    );
    assert_eq!(
        std::fs::read_dir(cwd.path()).expect("dir").count(),
        0,
        "nothing may be created"
    );
}
