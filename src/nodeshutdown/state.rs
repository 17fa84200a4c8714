//! The shutdown state file (upstream `localStorageStateFile`,
//! `<root-dir>/graceful_node_shutdown_state`): when the last shutdown
//! started and ended, written as it starts and again when it is done, read
//! at start so `kubelet_graceful_shutdown_{start,end}_time_seconds` survive
//! the reboot. JSON as upstream's Go `time.Time` (RFC 3339; an unset end is
//! Go's zero time).

use std::path::Path;

use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Upstream's file name, under the root directory.
pub const STATE_FILE: &str = "graceful_node_shutdown_state";
/// Go's zero `time.Time`: an end not reached yet.
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// The file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShutdownState {
    /// When the shutdown started.
    #[serde(rename = "startTime")]
    pub start_time: String,
    /// When it was done ([`ZERO_TIME`] while in progress).
    #[serde(rename = "endTime")]
    pub end_time: String,
}

impl ShutdownState {
    /// A shutdown starting at `start`.
    pub fn started(start: Timestamp) -> Self {
        Self {
            start_time: start.to_string(),
            end_time: ZERO_TIME.to_string(),
        }
    }

    /// The same shutdown, done at `end`.
    pub fn ended(&self, end: Timestamp) -> Self {
        Self {
            end_time: end.to_string(),
            ..self.clone()
        }
    }

    /// `(start, end)` in Unix seconds for the gauges; a time that is unset
    /// (zero) or unreadable is 0, as upstream's `timestamp()`.
    pub fn seconds(&self) -> (f64, f64) {
        let secs = |s: &str| {
            s.parse::<Timestamp>()
                .ok()
                .filter(|t| t.as_second() > 0)
                .map_or(0.0, |t| t.as_millisecond() as f64 / 1000.0)
        };
        (secs(&self.start_time), secs(&self.end_time))
    }
}

/// Reads the state file; `None` when absent or unreadable (logged).
pub fn load(path: &Path) -> Option<ShutdownState> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the node shutdown state");
            return None;
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| tracing::warn!(path = %path.display(), error = %e, "corrupt node shutdown state"))
        .ok()
}

/// Writes the state file (through a temporary file and a rename).
pub fn store(path: &Path, state: &ShutdownState) -> std::io::Result<()> {
    let json = serde_json::to_vec(state).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shutdown_is_recorded_as_started_then_ended_in_gos_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        assert_eq!(load(&path), None, "no file yet");
        let start: Timestamp = "2026-11-28T10:00:00.5Z".parse().unwrap();
        let started = ShutdownState::started(start);
        store(&path, &started).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            r#"{"startTime":"2026-11-28T10:00:00.5Z","endTime":"0001-01-01T00:00:00Z"}"#
        );
        assert_eq!(load(&path).map(|s| s.seconds()), Some((1_795_860_000.5, 0.0)));
        let ended = started.ended("2026-11-28T10:00:30Z".parse().unwrap());
        store(&path, &ended).unwrap();
        assert_eq!(
            load(&path).map(|s| s.seconds()),
            Some((1_795_860_000.5, 1_795_860_030.0))
        );
        std::fs::write(&path, "{").unwrap();
        assert_eq!(load(&path), None, "corrupt: ignored");
    }
}
