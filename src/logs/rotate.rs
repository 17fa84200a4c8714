//! Rotating one container's log file, as upstream's
//! `pkg/kubelet/logs/container_log_manager.go` does: the live file
//! `<log>` is renamed to `<log>.<YYYYMMDD-hhmmss>` (left uncompressed, the
//! runtime may still be writing to it until it reopens), older rotations are
//! gzip-compressed to `<log>.<ts>.gz`, the oldest ones removed so at most
//! `containerLogMaxFiles` files exist counting the live one and the one
//! about to be rotated, and leftovers of an interrupted rotation (`.tmp`
//! files, uncompressed files whose `.gz` exists) are removed first.
//!
//! The functions here do blocking file I/O; callers run them on the
//! blocking pool. The decisions ([`filter_unused`], [`excess`]) are pure.

use std::io;
use std::path::{Path, PathBuf};

/// Suffix of compressed rotations.
pub const COMPRESS_SUFFIX: &str = ".gz";
/// Suffix of a compression in progress.
pub const TMP_SUFFIX: &str = ".tmp";

/// A rotation step failed (with the path it failed on).
#[derive(Debug, thiserror::Error)]
#[error("{op} {path:?}: {source}")]
pub struct RotateError {
    /// What was being done.
    pub op: &'static str,
    /// The file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

fn err(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> RotateError {
    let path = path.to_path_buf();
    move |source| RotateError { op, path, source }
}

/// The suffix of a rotation at `t` (upstream's `20060102-150405`, local time).
///
/// ```
/// let t: k8s_openapi::jiff::Timestamp = "2024-03-05T07:08:09Z".parse().unwrap();
/// let zoned = t.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC);
/// assert_eq!(actlet::logs::rotate::timestamp_suffix(&zoned), "20240305-070809");
/// ```
pub fn timestamp_suffix(t: &jiff::Zoned) -> String {
    t.strftime("%Y%m%d-%H%M%S").to_string()
}

/// Splits rotated files into the ones in use and the leftovers: `.tmp`
/// files, and uncompressed files whose `.gz` exists.
///
/// ```
/// use actlet::logs::rotate::filter_unused;
/// let logs = ["0.log.1", "0.log.1.gz", "0.log.2", "0.log.3.gz.tmp"].map(String::from);
/// let (inuse, unused) = filter_unused(&logs);
/// assert_eq!(inuse, ["0.log.1.gz", "0.log.2"]);
/// assert_eq!(unused, ["0.log.1", "0.log.3.gz.tmp"]);
/// ```
pub fn filter_unused(logs: &[String]) -> (Vec<String>, Vec<String>) {
    logs.iter().cloned().partition(|l| {
        if l.ends_with(TMP_SUFFIX) {
            return false;
        }
        l.ends_with(COMPRESS_SUFFIX) || !logs.iter().any(|o| *o == format!("{l}{COMPRESS_SUFFIX}"))
    })
}

/// How many of `sorted` (oldest first) rotated files to remove so that
/// `max_files - 2` remain (the live file and the one about to be rotated
/// make up the rest).
///
/// ```
/// assert_eq!(actlet::logs::rotate::excess(5, 5), 2);
/// assert_eq!(actlet::logs::rotate::excess(2, 5), 0);
/// assert_eq!(actlet::logs::rotate::excess(3, 2), 3);
/// ```
pub fn excess(rotated: usize, max_files: usize) -> usize {
    rotated.saturating_sub(max_files.saturating_sub(2))
}

/// The rotated files of `log` (`<log>.*`), sorted oldest first (the
/// timestamp suffix sorts by time).
pub fn rotated_files(log: &Path) -> Result<Vec<String>, RotateError> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return Ok(vec![]);
    };
    let prefix = format!("{name}.");
    let mut out: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(&prefix))
            .map(|n| dir.join(n).to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(err("failed to list", dir)(e)),
    };
    out.sort();
    Ok(out)
}

fn remove(path: &str) -> Result<(), RotateError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(err("failed to remove", Path::new(path))(e)),
        _ => Ok(()),
    }
}

/// Compresses `log` to `log.gz` through `log.gz.tmp`, then removes `log`.
pub fn compress(log: &Path) -> Result<(), RotateError> {
    let mut gz = log.as_os_str().to_owned();
    gz.push(COMPRESS_SUFFIX);
    let gz = PathBuf::from(gz);
    let mut tmp = gz.clone().into_os_string();
    tmp.push(TMP_SUFFIX);
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut input = std::fs::File::open(log).map_err(err("failed to open log", log))?;
        let out = std::fs::File::create(&tmp).map_err(err("failed to create temporary log", &tmp))?;
        let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        io::copy(&mut input, &mut enc).map_err(err("failed to compress", log))?;
        enc.finish().map_err(err("failed to compress", log))?;
        std::fs::rename(&tmp, &gz).map_err(err("failed to rename temporary log", &tmp))
    })();
    let _ = std::fs::remove_file(&tmp);
    result?;
    remove(&log.to_string_lossy())
}

/// Prepares `log` for rotation: removes leftovers and excess rotations,
/// compresses the remaining uncompressed ones. Returns the rotated files
/// kept.
pub fn prepare(log: &Path, max_files: usize) -> Result<Vec<String>, RotateError> {
    let logs = rotated_files(log)?;
    let (inuse, unused) = filter_unused(&logs);
    for l in &unused {
        remove(l)?;
    }
    let drop = excess(inuse.len(), max_files);
    for l in &inuse[..drop] {
        remove(l)?;
    }
    let kept = inuse[drop..].to_vec();
    for l in kept.iter().filter(|l| !l.ends_with(COMPRESS_SUFFIX)) {
        compress(Path::new(l))?;
    }
    rotated_files(log)
}

/// Renames the live `log` to `<log>.<suffix>`; `Ok(None)` when that name
/// is taken (a second rotation within the same second: upstream would
/// overwrite the earlier one, losing it; here it waits for the next round).
pub fn rename_latest(log: &Path, suffix: &str) -> Result<Option<PathBuf>, RotateError> {
    let mut rotated = log.as_os_str().to_owned();
    rotated.push(format!(".{suffix}"));
    let rotated = PathBuf::from(rotated);
    let mut gz = rotated.clone().into_os_string();
    gz.push(COMPRESS_SUFFIX);
    if rotated.exists() || Path::new(&gz).exists() {
        return Ok(None);
    }
    std::fs::rename(log, &rotated).map_err(err("failed to rotate log", log))?;
    Ok(Some(rotated))
}

/// Puts a rotated file back (the runtime could not reopen the log).
pub fn undo_rename(log: &Path, rotated: &Path) -> Result<(), RotateError> {
    std::fs::rename(rotated, log).map_err(err("failed to rename rotated log back", rotated))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn prepare_cleans_limits_and_compresses() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        for (name, body) in [
            ("0.log", "live\n"),
            ("0.log.20240101-000001.gz", "x"),
            ("0.log.20240101-000002", "two\n"),
            ("0.log.20240101-000002.gz", "y"),
            ("0.log.20240101-000003", "three\n"),
            ("0.log.20240101-000004", "four\n"),
            ("0.log.20240101-000005.gz.tmp", "junk"),
            ("1.log.20240101-000001", "other container"),
        ] {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let kept = prepare(&log, 4).unwrap();
        // in use: 1.gz, 2.gz, 3, 4 → max 4 files keeps 2 rotated: 3 and 4, compressed
        assert_eq!(
            names(dir.path()),
            [
                "0.log",
                "0.log.20240101-000003.gz",
                "0.log.20240101-000004.gz",
                "1.log.20240101-000001"
            ]
        );
        assert_eq!(kept.len(), 2);
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(dir.path().join("0.log.20240101-000004.gz")).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "four\n");
    }

    #[test]
    fn rename_latest_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        std::fs::write(&log, "a\n").unwrap();
        let rotated = rename_latest(&log, "20240101-000000").unwrap().unwrap();
        assert!(!log.exists() && rotated.exists());
        std::fs::write(&log, "b\n").unwrap();
        assert!(rename_latest(&log, "20240101-000000").unwrap().is_none());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "b\n");
        std::fs::remove_file(&log).unwrap();
        undo_rename(&log, &rotated).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\n");
    }
}
