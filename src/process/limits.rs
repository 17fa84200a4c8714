//! `--max-open-files` (RLIMIT_NOFILE, soft and hard, as upstream
//! `rlimit.SetNumFiles`) and `--oom-score-adj` (written to
//! `/proc/self/oom_score_adj`, as upstream's OOM adjuster). Failures are
//! warnings for the caller to log, as upstream logs and carries on.

use std::path::Path;

use nix::sys::resource::{Resource, setrlimit};

/// Where the process's OOM score adjustment lives.
pub const OOM_SCORE_ADJ: &str = "/proc/self/oom_score_adj";

/// Sets the open-files limit (soft and hard) to `n`.
///
/// ```
/// // raising needs privileges; the current hard limit is always allowed
/// let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
/// actlet::process::limits::set_max_open_files(hard as i64).unwrap();
/// ```
pub fn set_max_open_files(n: i64) -> Result<(), String> {
    let n = u64::try_from(n).map_err(|_| format!("maxOpenFiles {n} must not be negative"))?;
    setrlimit(Resource::RLIMIT_NOFILE, n, n)
        .map_err(|e| format!("failed to set rlimit on max file handles to {n}: {e}"))
}

/// Writes `value` to an `oom_score_adj` file (normally [`OOM_SCORE_ADJ`]).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let f = dir.path().join("oom_score_adj");
/// actlet::process::limits::apply_oom_score_adj(&f, -999).unwrap();
/// assert_eq!(std::fs::read_to_string(&f).unwrap(), "-999");
/// ```
pub fn apply_oom_score_adj(file: &Path, value: i32) -> Result<(), String> {
    std::fs::write(file, value.to_string())
        .map_err(|e| format!("failed to set oom_score_adj to {value} in {}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_names_value_and_file() {
        let e = apply_oom_score_adj(Path::new("/nonexistent/oom_score_adj"), -999).unwrap_err();
        assert!(e.contains("-999") && e.contains("/nonexistent/oom_score_adj"), "{e}");
    }

    #[test]
    fn negative_limits_are_refused() {
        assert!(set_max_open_files(-1).unwrap_err().contains("negative"));
    }
}
