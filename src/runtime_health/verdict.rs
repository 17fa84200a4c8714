//! Pure: a CRI `Status` result → [`RuntimeHealthChanged`], and the sync gate.

use std::time::Duration;

use crate::cri::CriResult;
use crate::cri::v1::StatusResponse;
use crate::messages::runtime_health::{RuntimeFeatureSet, RuntimeHealthChanged};

/// Turns the answer of CRI `Status` into a verdict with upstream's messages
/// ("container runtime is down", "container runtime network not ready: …").
pub fn verdict(result: &CriResult<StatusResponse>) -> RuntimeHealthChanged {
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            return RuntimeHealthChanged {
                runtime_ready: false,
                network_ready: false,
                message: format!("container runtime is down: {e}"),
                features: None,
            };
        }
    };
    let conds = resp
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let find = |t: &str| conds.iter().find(|c| c.r#type == t);
    let describe = |t: &str| match find(t) {
        Some(c) => format!("{t}=false reason:{} message:{}", c.reason, c.message),
        None => format!("{t} condition missing"),
    };
    let runtime_ready = find("RuntimeReady").is_some_and(|c| c.status);
    let network_ready = find("NetworkReady").is_some_and(|c| c.status);
    let message = if !runtime_ready {
        format!(
            "container runtime status check may not have completed yet: {}",
            describe("RuntimeReady")
        )
    } else if !network_ready {
        format!("container runtime network not ready: {}", describe("NetworkReady"))
    } else {
        String::new()
    };
    RuntimeHealthChanged {
        runtime_ready,
        network_ready,
        message,
        // A runtime that sends no features (containerd 1.x) has none: the
        // Node then reports no `features`, as upstream's setter does.
        features: resp.features.as_ref().map(|f| RuntimeFeatureSet {
            supplemental_groups_policy: f.supplemental_groups_policy,
        }),
    }
}

/// The sync loop's gate while the runtime is down: skip syncs with an
/// exponential backoff from 100 ms to 5 s (upstream `syncLoop`), reset as
/// soon as the runtime is ready again.
#[derive(Debug, Clone)]
pub struct HealthGate {
    ready: bool,
    delay: Duration,
}

impl Default for HealthGate {
    fn default() -> Self {
        Self::new()
    }
}

impl HealthGate {
    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    /// A gate that starts open (optimistic until the first check says otherwise).
    pub fn new() -> Self {
        Self {
            ready: true,
            delay: Self::MIN,
        }
    }

    /// Records the latest verdict.
    pub fn set_ready(&mut self, ready: bool) {
        self.ready = ready;
        if ready {
            self.delay = Self::MIN;
        }
    }

    /// Whether syncs may run.
    pub fn is_open(&self) -> bool {
        self.ready
    }

    /// While closed: how long to wait before looking again (doubles each call, up to 5 s).
    pub fn next_delay(&mut self) -> Duration {
        let d = self.delay;
        self.delay = (self.delay * 2).min(Self::MAX);
        d
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;
    use crate::cri::CriError;
    use crate::cri::v1::{RuntimeCondition, RuntimeStatus};

    fn status(runtime: bool, network: bool) -> CriResult<StatusResponse> {
        let c = |t: &str, s: bool| RuntimeCondition {
            r#type: t.into(),
            status: s,
            reason: if s {
                String::new()
            } else {
                "NetworkPluginNotReady".into()
            },
            message: if s {
                String::new()
            } else {
                "cni config uninitialized".into()
            },
        };
        Ok(StatusResponse {
            status: Some(RuntimeStatus {
                conditions: vec![c("RuntimeReady", runtime), c("NetworkReady", network)],
            }),
            info: Default::default(),
            features: None,
        })
    }

    #[test]
    fn features_are_what_the_runtime_reports_and_unknown_when_it_is_down() {
        let mut resp = status(true, true).unwrap();
        assert_eq!(verdict(&Ok(resp.clone())).features, None, "containerd 1.x sends none");
        resp.features = Some(crate::cri::v1::RuntimeFeatures {
            supplemental_groups_policy: true,
        });
        let v = verdict(&Ok(resp));
        assert_eq!(v.features.map(|f| f.supplemental_groups_policy), Some(true));
        let down = verdict(&Err(CriError::new("Status", Code::Unavailable, "gone")));
        assert_eq!(down.features, None);
    }

    #[test]
    fn ready_runtime_and_network() {
        let v = verdict(&status(true, true));
        assert!(v.runtime_ready && v.network_ready && v.message.is_empty());
    }

    #[test]
    fn network_not_ready_names_the_reason() {
        let v = verdict(&status(true, false));
        assert!(v.runtime_ready && !v.network_ready);
        assert!(
            v.message
                .starts_with("container runtime network not ready: NetworkReady=false"),
            "{}",
            v.message
        );
        assert!(v.message.contains("cni config uninitialized"));
    }

    #[test]
    fn unreachable_runtime_is_down_with_the_cause() {
        let v = verdict(&Err(CriError::new(
            "Status",
            Code::Unavailable,
            "connect: no such file",
        )));
        assert!(!v.runtime_ready);
        assert!(v.message.starts_with("container runtime is down"), "{}", v.message);
        assert!(v.message.contains("no such file"));
    }

    #[test]
    fn gate_backs_off_100ms_to_5s_and_resets() {
        let mut g = HealthGate::new();
        g.set_ready(false);
        let delays: Vec<_> = (0..8).map(|_| g.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        g.set_ready(true);
        assert!(g.is_open());
        g.set_ready(false);
        assert_eq!(g.next_delay().as_millis(), 100);
    }
}
