//! Logging manifest errors once per change, not on every 20 s re-read.

use std::collections::BTreeMap;

use crate::messages::pod_update::{ManifestError, PodSource};

/// The errors last logged for one source, by origin.
#[derive(Debug, Default)]
pub struct ManifestErrorLog {
    logged: BTreeMap<String, String>,
}

impl ManifestErrorLog {
    /// Nothing logged yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs `errors` (the current read's): a `warn!` for each new or changed
    /// one (field `file` or `url`, and `reason`), an `info!` for each origin
    /// whose error went away, a `debug!` for repeats.
    pub fn update(&mut self, source: &PodSource, errors: &[ManifestError]) {
        let mut next = BTreeMap::new();
        for ManifestError { origin, reason } in errors {
            if self.logged.get(origin) == Some(reason) {
                tracing::debug!(
                    source = source.as_str(),
                    origin,
                    reason,
                    "static pod manifest still invalid"
                );
            } else if matches!(source, PodSource::Http) {
                tracing::warn!(
                    url = origin,
                    reason,
                    "invalid static pod manifest, keeping its last good pods"
                );
            } else {
                tracing::warn!(
                    file = origin,
                    reason,
                    "invalid static pod manifest, keeping its last good pods"
                );
            }
            next.insert(origin.clone(), reason.clone());
        }
        for origin in self.logged.keys().filter(|origin| !next.contains_key(*origin)) {
            tracing::info!(
                source = source.as_str(),
                origin,
                "static pod manifest no longer in error"
            );
        }
        self.logged = next;
    }

    /// Origins whose errors were last logged, with their reasons.
    pub fn logged(&self) -> &BTreeMap<String, String> {
        &self.logged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(origin: &str, reason: &str) -> ManifestError {
        ManifestError {
            origin: origin.into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn tracks_the_latest_errors_by_origin() {
        let mut log = ManifestErrorLog::new();
        log.update(&PodSource::File, &[error("a", "x"), error("b", "y")]);
        log.update(&PodSource::File, &[error("a", "z")]);
        assert_eq!(
            log.logged().iter().collect::<Vec<_>>(),
            [(&"a".to_owned(), &"z".to_owned())]
        );
        log.update(&PodSource::File, &[]);
        assert!(log.logged().is_empty());
    }
}
