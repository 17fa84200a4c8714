//! Pure file work of one container's log rotation (upstream
//! `containerLogManager.rotateLog`), on the real filesystem: blocking, run
//! off the actor threads.
//!
//! With `containerLogMaxFiles` = N, a container keeps its current log, the
//! newest rotated file uncompressed and at most N − 2 older ones gzipped:
//! N files in all. Rotated files are named `<log>.<YYYYmmdd-HHMMSS>` and
//! `<log>.<YYYYmmdd-HHMMSS>.gz`, as upstream.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Suffix of compressed rotated logs.
pub const COMPRESS_SUFFIX: &str = ".gz";
/// Suffix of a compression in progress.
pub const TMP_SUFFIX: &str = ".tmp";

/// The rotated files of `log` (`<log>.*`), sorted oldest first (their
/// timestamps sort as text).
pub fn rotated_files(log: &Path) -> io::Result<Vec<PathBuf>> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return Ok(vec![]);
    };
    let prefix = format!("{name}.");
    let mut out: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

fn name_of(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// Upstream `cleanupUnusedLogs`: removes unfinished compressions (`.tmp`)
/// and uncompressed files whose compressed copy exists; returns the rest.
pub fn cleanup_unused(logs: Vec<PathBuf>) -> io::Result<Vec<PathBuf>> {
    let (tmp, rest): (Vec<_>, Vec<_>) = logs.into_iter().partition(|p| name_of(p).ends_with(TMP_SUFFIX));
    for p in &tmp {
        remove(p)?;
    }
    let compressed = |p: &Path| Path::new(&format!("{}{COMPRESS_SUFFIX}", name_of(p))).exists();
    let (dup, keep): (Vec<_>, Vec<_>) = rest
        .into_iter()
        .partition(|p| !name_of(p).ends_with(COMPRESS_SUFFIX) && compressed(p));
    for p in &dup {
        remove(p)?;
    }
    Ok(keep)
}

/// Upstream `removeExcessLogs`: keeps the newest `max_files − 2` rotated
/// files (the current log and the one about to be rotated make N).
pub fn remove_excess(mut logs: Vec<PathBuf>, max_files: usize) -> io::Result<Vec<PathBuf>> {
    logs.sort();
    let keep = max_files.saturating_sub(2);
    let excess = logs.len().saturating_sub(keep);
    for p in logs.drain(..excess) {
        remove(&p)?;
    }
    Ok(logs)
}

fn remove(p: &Path) -> io::Result<()> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Upstream `compressLog`: `<f>` → `<f>.tmp` (gzip) → `<f>.gz`, then `<f>`
/// removed; a crash halfway leaves a `.tmp` the next round removes.
pub fn compress(log: &Path) -> io::Result<PathBuf> {
    let tmp = PathBuf::from(format!("{}{TMP_SUFFIX}", name_of(log)));
    let gz = PathBuf::from(format!("{}{COMPRESS_SUFFIX}", name_of(log)));
    {
        let mut src = fs::File::open(log)?;
        let out = fs::File::create(&tmp)?;
        let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        io::copy(&mut src, &mut enc)?;
        enc.finish()?.sync_all()?;
    }
    fs::rename(&tmp, &gz)?;
    remove(log)?;
    Ok(gz)
}

/// Compresses every uncompressed rotated file of `logs`.
pub fn compress_all(logs: &[PathBuf]) -> io::Result<()> {
    for p in logs.iter().filter(|p| !name_of(p).ends_with(COMPRESS_SUFFIX)) {
        compress(p)?;
    }
    Ok(())
}

/// The name the current log is rotated to at `now` (`20060102-150405`, as
/// upstream); when a file of that name (or its `.gz`) exists already — two
/// rotations within a second — `-1`, `-2`, … is appended so nothing is
/// overwritten (the names still sort oldest first).
pub fn rotated_name(log: &Path, now: jiff::Timestamp) -> PathBuf {
    let stamp = now.strftime("%Y%m%d-%H%M%S");
    let base = format!("{}.{stamp}", name_of(log));
    let taken = |p: &str| Path::new(p).exists() || Path::new(&format!("{p}{COMPRESS_SUFFIX}")).exists();
    let mut name = base.clone();
    let mut n = 0;
    while taken(&name) {
        n += 1;
        name = format!("{base}-{n}");
    }
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn touch(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, body).unwrap_or_else(|e| panic!("{e}"));
        p
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .map(|r| {
                r.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn rotated_files_are_the_logs_siblings_oldest_first() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = touch(d.path(), "0.log", "");
        touch(d.path(), "0.log.20260101-000002.gz", "");
        touch(d.path(), "0.log.20260101-000001", "");
        touch(d.path(), "1.log.20260101-000000", "");
        let got = rotated_files(&log).unwrap_or_default();
        let got: Vec<_> = got.iter().filter_map(|p| p.file_name()?.to_str()).collect();
        assert_eq!(got, ["0.log.20260101-000001", "0.log.20260101-000002.gz"]);
    }

    #[test]
    fn cleanup_removes_tmp_files_and_duplicates_of_compressed_ones() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let a = touch(d.path(), "0.log.1", "");
        let a_gz = touch(d.path(), "0.log.1.gz", "");
        let b = touch(d.path(), "0.log.2", "");
        let tmp = touch(d.path(), "0.log.2.tmp", "");
        let kept = cleanup_unused(vec![a, a_gz.clone(), b.clone(), tmp]).unwrap_or_default();
        assert_eq!(kept, vec![a_gz, b]);
        assert_eq!(names(d.path()), ["0.log.1.gz", "0.log.2"]);
    }

    #[test]
    fn excess_rotated_files_go_oldest_first() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let logs: Vec<_> = (1..=5).map(|i| touch(d.path(), &format!("0.log.{i}.gz"), "")).collect();
        let kept = remove_excess(logs, 5).unwrap_or_default();
        assert_eq!(kept.len(), 3);
        assert_eq!(names(d.path()), ["0.log.3.gz", "0.log.4.gz", "0.log.5.gz"]);
    }

    #[test]
    fn compression_round_trips_and_removes_the_original() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let body = "2026-01-01T00:00:00Z stdout F hello\n".repeat(100);
        let p = touch(d.path(), "0.log.1", &body);
        let gz = compress(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names(d.path()), ["0.log.1.gz"]);
        let mut out = String::new();
        flate2::read::GzDecoder::new(fs::File::open(gz).unwrap_or_else(|e| panic!("{e}")))
            .read_to_string(&mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, body);
    }

    #[test]
    fn a_second_rotation_within_a_second_never_overwrites() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = d.path().join("0.log");
        let now: jiff::Timestamp = "2026-11-25T01:02:03Z".parse().unwrap_or_else(|e| panic!("{e}"));
        touch(d.path(), "0.log.20261125-010203.gz", "");
        let second = rotated_name(&log, now);
        assert_eq!(second, d.path().join("0.log.20261125-010203-1"));
        touch(d.path(), "0.log.20261125-010203-1", "");
        assert_eq!(rotated_name(&log, now), d.path().join("0.log.20261125-010203-2"));
    }

    #[test]
    fn rotated_names_carry_upstreams_timestamp() {
        let now: jiff::Timestamp = "2026-11-25T01:02:03Z".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rotated_name(Path::new("/var/log/pods/x/c/0.log"), now),
            PathBuf::from("/var/log/pods/x/c/0.log.20261125-010203")
        );
    }
}
