//! Child processes: pinning with `taskset`, capturing output, stopping with SIGTERM then
//! SIGKILL, and running a tool to completion under a time limit with its CPU usage.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::error::{HarnessError, IoContext};

/// Most bytes of one output stream kept in memory per child.
const OUTPUT_CAP: usize = 4 * 1024 * 1024;

/// Builds a command for `program`, run under `taskset -c CPUS` when `cpus` is set. The child
/// gets SIGTERM when the harness dies, so no server or client outlives an interrupted run.
pub fn pinned_command(program: impl AsRef<OsStr>, cpus: Option<&str>) -> Command {
    let mut cmd = match cpus {
        Some(cpus) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(cpus).arg(program);
            cmd
        }
        None => Command::new(program),
    };
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the parent;
    // it is all that runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// Strips ANSI escape sequences (colour codes in log lines).
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte (0x40..=0x7e).
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Output captured from a child: every line as it arrives, and the text so far.
#[derive(Clone, Default)]
struct Captured {
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

fn append_capped(buf: &Mutex<String>, line: &str) {
    if let Ok(mut buf) = buf.lock() {
        if buf.len() + line.len() < OUTPUT_CAP {
            buf.push_str(line);
            buf.push('\n');
        }
    }
}

fn spawn_reader(
    stream: impl Read + Send + 'static,
    sink: Arc<Mutex<String>>,
    lines: mpsc::Sender<String>,
) {
    thread::spawn(move || pump(stream, sink, lines));
}

/// Copies `stream` line by line (ANSI codes stripped) into `sink` and `lines` until EOF.
fn pump(stream: impl Read, sink: Arc<Mutex<String>>, lines: mpsc::Sender<String>) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        let line = strip_ansi(&line);
        append_capped(&sink, &line);
        let _ = lines.send(line);
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A long-running child (a server or a probe) that is stopped when dropped.
pub struct Managed {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    captured: Captured,
    finished: bool,
}

impl Managed {
    /// Starts `cmd` with stdout and stderr captured (and stdin piped when `stdin` is true).
    ///
    /// # Errors
    /// [`HarnessError::Io`] when the program cannot be started.
    pub fn spawn(name: &str, mut cmd: Command, stdin: bool) -> Result<Managed, HarnessError> {
        cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .context(|| format!("cannot start {name} ({cmd:?})"))?;
        let captured = Captured::default();
        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            spawn_reader(out, Arc::clone(&captured.stdout), tx.clone());
        }
        if let Some(err) = child.stderr.take() {
            spawn_reader(err, Arc::clone(&captured.stderr), tx);
        }
        Ok(Managed {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            captured,
            finished: false,
        })
    }

    /// Process id of the child (`taskset` execs the program, so the id is the program's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last `lines` lines of standard error and standard output, for error messages.
    pub fn output_tail(&self, lines: usize) -> String {
        let get = |m: &Mutex<String>| m.lock().map(|s| tail(&s, lines)).unwrap_or_default();
        format!(
            "stderr:\n{}\nstdout:\n{}",
            get(&self.captured.stderr),
            get(&self.captured.stdout)
        )
    }

    /// Everything the child wrote on standard output so far (up to a cap).
    pub fn stdout_text(&self) -> String {
        self.captured
            .stdout
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Waits until an output line (stdout or stderr, ANSI codes stripped) makes `found`
    /// return `Some`, and returns that value.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when the child exits first or `timeout` passes.
    pub fn wait_for_line<T>(
        &mut self,
        timeout: Duration,
        mut found: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, HarnessError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) => {
                    if let Some(value) = found(&line) {
                        return Ok(value);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        self.finished = true;
                        return Err(self.failure(format!("exited early ({status})")));
                    }
                    if left.is_zero() {
                        return Err(self.failure(format!("no expected output within {timeout:?}")));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    self.finished = true;
                    return Err(self.failure(format!("closed its output (exit: {status:?})")));
                }
            }
        }
    }

    fn failure(&self, detail: String) -> HarnessError {
        HarnessError::Process {
            what: self.name.clone(),
            detail: format!("{detail}\n{}", self.output_tail(15)),
        }
    }

    /// Whether the child is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Closes the child's standard input (a signal to stop for `shardline-load
    /// --until-stdin-eof`).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Writes `data` to the child's standard input.
    ///
    /// # Errors
    /// [`HarnessError::Io`] when stdin was not piped or the write fails.
    pub fn write_stdin(&mut self, data: &[u8]) -> Result<(), HarnessError> {
        let name = self.name.clone();
        match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(data)
                .context(|| format!("writing to {name}'s stdin")),
            None => Err(HarnessError::Process {
                what: name,
                detail: "stdin is not piped".into(),
            }),
        }
    }

    /// Waits up to `timeout` for the child to exit by itself.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it is still running after `timeout` (it is then killed).
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus, HarnessError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.finished = true;
                    return Ok(status);
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                _ => {
                    self.kill();
                    return Err(self.failure(format!("did not exit within {timeout:?}")));
                }
            }
        }
    }

    /// Sends SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.finished {
            return self.child.try_wait().ok().flatten();
        }
        self.stdin = None;
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid; no memory is touched.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.finished = true;
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        self.child.try_wait().ok().flatten()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.finished = true;
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        if !self.finished {
            self.stop(Duration::from_secs(5));
        }
    }
}

/// A tool run to completion.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// User CPU time the child used, seconds.
    pub user_s: f64,
    /// System CPU time the child used, seconds.
    pub sys_s: f64,
}

fn timeval_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Runs `cmd` to completion, killing it after `timeout`; collects output and the CPU time it
/// used (wait4's rusage).
///
/// # Errors
/// [`HarnessError::Io`] when it cannot start, [`HarnessError::Process`] on time-out.
pub fn run_to_completion(
    what: &str,
    mut cmd: Command,
    timeout: Duration,
) -> Result<Finished, HarnessError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .context(|| format!("cannot start {what} ({cmd:?})"))?;
    let captured = Captured::default();
    let (tx, _lines) = mpsc::channel();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        let sink = Arc::clone(&captured.stdout);
        let tx = tx.clone();
        readers.push(thread::spawn(move || pump(out, sink, tx)));
    }
    if let Some(err) = child.stderr.take() {
        let sink = Arc::clone(&captured.stderr);
        readers.push(thread::spawn(move || pump(err, sink, tx)));
    }
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| HarnessError::Process {
        what: what.to_owned(),
        detail: "pid out of range".into(),
    })?;
    let deadline = started + timeout;
    let (raw_status, usage) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child with valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        if r < 0 {
            return Err(HarnessError::Io {
                context: format!("waiting for {what}"),
                source: std::io::Error::last_os_error(),
            });
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(HarnessError::Process {
                what: what.to_owned(),
                detail: format!("still running after {timeout:?}; killed"),
            });
        }
        thread::sleep(Duration::from_millis(10));
    };
    let wall = started.elapsed();
    for reader in readers {
        let _ = reader.join();
    }
    let get = |m: &Mutex<String>| m.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(Finished {
        status: ExitStatus::from_raw(raw_status),
        stdout: get(&captured.stdout),
        stderr: get(&captured.stderr),
        wall,
        user_s: timeval_s(usage.ru_utime),
        sys_s: timeval_s(usage.ru_stime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_codes() {
        assert_eq!(
            strip_ansi("\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m listening on x"),
            "2026  INFO listening on x"
        );
    }

    #[test]
    fn runs_a_tool_and_measures_it() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("echo out; echo err >&2; exit 3");
        let done = run_to_completion("sh", cmd, Duration::from_secs(10)).expect("sh runs");
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout, "out\n");
        assert_eq!(done.stderr, "err\n");
        assert!(done.user_s >= 0.0 && done.sys_s >= 0.0);
    }

    #[test]
    fn kills_a_tool_that_runs_too_long() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = Instant::now();
        assert!(run_to_completion("sleep", cmd, Duration::from_millis(200)).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn managed_child_is_stopped() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("echo ready; exec sleep 30");
        let mut child = Managed::spawn("sh", cmd, false).expect("sh starts");
        let got = child
            .wait_for_line(Duration::from_secs(5), |l| (l == "ready").then_some(()))
            .is_ok();
        assert!(got);
        assert!(child.is_running());
        assert!(child.stop(Duration::from_secs(5)).is_some());
    }
}
