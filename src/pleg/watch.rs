//! The CRI container event stream as the PLEG uses it (`EventedPLEG`), pure
//! parts: which pod an event names, and when to reconnect.
//!
//! An event is only a hint: it asks for a targeted relist of its pod (a
//! fresh read through the same path a global relist takes); its payload never
//! becomes kubelet state, so stale, duplicate or reordered events cost at most
//! a redundant read (upstream KEP-3386 as refactored: a stopped container
//! event triggers a targeted relist). A (re)connected stream is followed by
//! a global relist, the recovery boundary for events lost while it was down.

use std::time::Duration;

use crate::cri::v1;
use crate::messages::PodUid;

/// The longest wait between reconnection attempts, and the wait after the
/// runtime said it does not serve the stream (it may be upgraded).
pub const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(60);
/// A connection that stayed up this long resets the backoff.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// The pod an event is about: (uid, name, namespace) from its sandbox
/// status's metadata; `None` when the runtime left the uid out (then the
/// event is ignored, as upstream does).
///
/// ```
/// use actlet::cri::v1;
/// use actlet::pleg::watch::event_pod;
/// let event = v1::ContainerEventResponse {
///     container_id: "c1".into(),
///     pod_sandbox_status: Some(v1::PodSandboxStatus {
///         metadata: Some(v1::PodSandboxMetadata { name: "web".into(), uid: "u1".into(), namespace: "default".into(), attempt: 0 }),
///         ..Default::default()
///     }),
///     ..Default::default()
/// };
/// assert_eq!(event_pod(&event), Some(("u1".into(), "web".to_string(), "default".to_string())));
/// assert_eq!(event_pod(&v1::ContainerEventResponse::default()), None);
/// ```
pub fn event_pod(event: &v1::ContainerEventResponse) -> Option<(PodUid, String, String)> {
    let m = event.pod_sandbox_status.as_ref()?.metadata.as_ref()?;
    (!m.uid.is_empty()).then(|| (PodUid::new(m.uid.as_str()), m.name.clone(), m.namespace.clone()))
}

/// When to try connecting again: the first retry at once, then doubling
/// from 1 s up to [`MAX_RECONNECT_DELAY`]; a runtime without the stream is
/// asked again every [`MAX_RECONNECT_DELAY`]; a connection that lasted
/// [`HEALTHY_AFTER`] starts the sequence over.
///
/// ```
/// use std::time::Duration;
/// use actlet::pleg::watch::ReconnectBackoff;
/// let mut b = ReconnectBackoff::default();
/// assert_eq!(b.after_failure(false), Duration::ZERO);
/// assert_eq!(b.after_failure(false), Duration::from_secs(1));
/// assert_eq!(b.after_failure(false), Duration::from_secs(2));
/// assert_eq!(b.after_failure(true), Duration::from_secs(60)); // UNIMPLEMENTED
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReconnectBackoff {
    failures: u32,
}

impl ReconnectBackoff {
    /// The delay before the next attempt after a failed attempt or a broken
    /// stream (`unimplemented`: the runtime does not serve it).
    pub fn after_failure(&mut self, unimplemented: bool) -> Duration {
        let n = self.failures;
        self.failures = self.failures.saturating_add(1);
        if unimplemented {
            return MAX_RECONNECT_DELAY;
        }
        match n {
            0 => Duration::ZERO,
            n => Duration::from_secs(1u64 << (n - 1).min(6)).min(MAX_RECONNECT_DELAY),
        }
    }

    /// A stream that was up for `lasted` ended: start over if it was healthy.
    pub fn after_disconnect(&mut self, lasted: Duration) -> Duration {
        if lasted >= HEALTHY_AFTER {
            self.failures = 0;
        }
        self.after_failure(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_and_resets_after_a_healthy_connection() {
        let mut b = ReconnectBackoff::default();
        let delays: Vec<u64> = (0..9).map(|_| b.after_failure(false).as_secs()).collect();
        assert_eq!(delays, [0, 1, 2, 4, 8, 16, 32, 60, 60]);
        // A flapping connection (up 5 s) keeps the backoff.
        assert_eq!(b.after_disconnect(Duration::from_secs(5)), MAX_RECONNECT_DELAY);
        // One that stayed up a minute starts over: the first retry is immediate.
        assert_eq!(b.after_disconnect(HEALTHY_AFTER), Duration::ZERO);
        assert_eq!(b.after_failure(false), Duration::from_secs(1));
    }

    #[test]
    fn a_runtime_without_the_stream_is_asked_again_at_the_cap() {
        let mut b = ReconnectBackoff::default();
        assert_eq!(b.after_failure(true), MAX_RECONNECT_DELAY);
        assert_eq!(b.after_failure(true), MAX_RECONNECT_DELAY);
    }
}
