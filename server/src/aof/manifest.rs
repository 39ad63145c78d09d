//! The manifest of one shard's log files (Redis 7 multi-part AOF): which base file (a
//! compact dump) and which incremental files (records since) make up the log, in replay
//! order. A rewrite switches files by replacing the manifest atomically (write a temporary
//! file, fdatasync, rename over the old one, fsync the directory), so a crash at any moment
//! leaves either the old or the new set of files, all of them present.
//!
//! Format, one line per file: `file <name> seq <n> type b|i` (base first). A shard without a
//! manifest has the single incremental file `shard-<N>.aof` (the first start's layout).

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory, OpenOptions};

/// The files of one shard's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if a rewrite made one.
    pub base: Option<String>,
    /// Incremental files, oldest first; records are appended to the last.
    pub incrs: Vec<String>,
    /// Sequence number of the newest file (names of new files use the next one).
    pub seq: u64,
}

impl Manifest {
    /// The layout of a shard that never rewrote its log.
    pub fn initial(shard: usize) -> Self {
        Self {
            base: None,
            incrs: vec![format!("shard-{shard}.aof")],
            seq: 0,
        }
    }

    /// The manifest file of shard `shard` in `dir`.
    pub fn path(dir: &Path, shard: usize) -> PathBuf {
        dir.join(format!("shard-{shard}.manifest"))
    }

    /// Parses the manifest text.
    ///
    /// Errors: a line that is not `file <name> seq <n> type b|i`, a name with a `/`, no
    /// incremental file, or a base that is not first.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut manifest = Self {
            base: None,
            incrs: Vec::new(),
            seq: 0,
        };
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = || {
                format!(
                    "line {}: expected `file NAME seq N type b|i`: {line:?}",
                    n + 1
                )
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let ["file", name, "seq", seq, "type", kind] = words.as_slice() else {
                return Err(bad());
            };
            if name.contains('/') {
                return Err(bad());
            }
            let seq: u64 = seq.parse().map_err(|_| bad())?;
            manifest.seq = manifest.seq.max(seq);
            match *kind {
                "b" if manifest.base.is_none() && manifest.incrs.is_empty() => {
                    manifest.base = Some(name.to_string())
                }
                "i" => manifest.incrs.push(name.to_string()),
                _ => return Err(bad()),
            }
        }
        if manifest.incrs.is_empty() {
            return Err("no incremental file".into());
        }
        Ok(manifest)
    }

    /// The manifest text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Some(base) = &self.base {
            text.push_str(&format!("file {base} seq {} type b\n", self.seq));
        }
        for incr in &self.incrs {
            text.push_str(&format!("file {incr} seq {} type i\n", self.seq));
        }
        text
    }

    /// Reads shard `shard`'s manifest from `dir` through io_uring; [`Manifest::initial`] when
    /// there is none.
    pub async fn load(dir: &Path, shard: usize) -> Result<Self, String> {
        Ok(Self::load_stored(dir, shard)
            .await?
            .unwrap_or_else(|| Self::initial(shard)))
    }

    /// Reads shard `shard`'s manifest from `dir` through io_uring; `None` when none is stored
    /// (a log's first start).
    pub async fn load_stored(dir: &Path, shard: usize) -> Result<Option<Self>, String> {
        let path = Self::path(dir, shard);
        if !path.exists() {
            return Ok(None);
        }
        let shown = path.display();
        let file = BufferedFile::open(&path)
            .await
            .map_err(|err| format!("cannot open {shown}: {err}"))?;
        let bytes = file
            .read_at(0, 64 << 10)
            .await
            .map_err(|err| format!("cannot read {shown}: {err}"))?;
        let _ = file.close().await;
        let text = std::str::from_utf8(&bytes).map_err(|_| format!("{shown}: not UTF-8"))?;
        Self::parse(text)
            .map(Some)
            .map_err(|err| format!("{shown}: {err}"))
    }

    /// Replaces shard `shard`'s manifest in `dir` atomically (the commit point of a rewrite).
    pub async fn store(&self, dir: &Path, shard: usize) -> Result<(), String> {
        let path = Self::path(dir, shard);
        let tmp = dir.join(format!("shard-{shard}.manifest.tmp"));
        let io =
            |what: &str, err: glommio::GlommioError<()>| format!("{what} {}: {err}", tmp.display());
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .buffered_open(&tmp)
            .await
            .map_err(|err| io("cannot create", err))?;
        file.write_at(self.render().into_bytes(), 0)
            .await
            .map_err(|err| io("cannot write", err))?;
        file.fdatasync()
            .await
            .map_err(|err| io("cannot sync", err))?;
        file.rename(&path)
            .await
            .map_err(|err| io("cannot rename", err))?;
        let _ = file.close().await;
        sync_dir(dir).await
    }
}

/// fsyncs directory `dir` so renames and new files in it survive a power loss.
pub async fn sync_dir(dir: &Path) -> Result<(), String> {
    let handle = Directory::open(dir)
        .await
        .map_err(|err| format!("cannot open {}: {err}", dir.display()))?;
    handle
        .sync()
        .await
        .map_err(|err| format!("cannot sync {}: {err}", dir.display()))?;
    let _ = handle.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_parse_round_trip() {
        let manifest = Manifest {
            base: Some("shard-1.base.3.aof".into()),
            incrs: vec!["shard-1.incr.3.aof".into()],
            seq: 3,
        };
        assert_eq!(
            manifest.render(),
            "file shard-1.base.3.aof seq 3 type b\nfile shard-1.incr.3.aof seq 3 type i\n"
        );
        assert_eq!(Manifest::parse(&manifest.render()), Ok(manifest));
        assert!(Manifest::parse("file ../x seq 1 type i\n").is_err());
        assert!(Manifest::parse("file a seq 1 type b\n").is_err());
    }
}
