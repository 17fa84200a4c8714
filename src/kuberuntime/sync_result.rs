//! What a sync did, step by step (upstream `kubecontainer.PodSyncResult`), so
//! the caller can record events, set waiting reasons (`CrashLoopBackOff`,
//! `ImagePullBackOff`, …) and decide whether to retry.

use std::fmt;

/// A step of a sync (upstream `SyncAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncAction {
    /// Start a container (init or regular).
    StartContainer,
    /// Kill a container.
    KillContainer,
    /// Create the sandbox.
    CreatePodSandbox,
    /// Build the sandbox config for the containers.
    ConfigPodSandbox,
    /// Stop the sandbox(es).
    KillPodSandbox,
    /// Resize a running container in place.
    ResizePodInPlace,
}

impl SyncAction {
    /// The upstream name.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncAction::StartContainer => "StartContainer",
            SyncAction::KillContainer => "KillContainer",
            SyncAction::CreatePodSandbox => "CreatePodSandbox",
            SyncAction::ConfigPodSandbox => "ConfigPodSandbox",
            SyncAction::KillPodSandbox => "KillPodSandbox",
            SyncAction::ResizePodInPlace => "ResizePodInPlace",
        }
    }
}

/// Why a step failed: upstream's error names, which become container waiting
/// reasons and event reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncErrorReason {
    /// The container is in restart backoff.
    CrashLoopBackOff,
    /// `StartContainer` failed.
    RunContainerError,
    /// `StopContainer` failed.
    KillContainerError,
    /// The sandbox could not be created.
    CreatePodSandboxError,
    /// The sandbox config could not be built.
    ConfigPodSandboxError,
    /// `StopPodSandbox` failed.
    KillPodSandboxError,
    /// The container config could not be built.
    CreateContainerConfigError,
    /// `CreateContainer` failed.
    CreateContainerError,
    /// `PullImage` failed.
    ErrImagePull,
    /// The image pull is in backoff.
    ImagePullBackOff,
    /// The image is missing and the pull policy is `Never`.
    ErrImageNeverPull,
    /// The image name is invalid.
    InvalidImageName,
    /// `ImageStatus` failed.
    ImageInspectError,
    /// The postStart hook failed (the container was killed).
    PostStartHookError,
    /// An in-place resize (`UpdateContainerResources`) failed.
    ResizeError,
}

impl SyncErrorReason {
    /// The upstream name (as shown in `kubectl get pods`).
    pub fn as_str(self) -> &'static str {
        match self {
            SyncErrorReason::CrashLoopBackOff => "CrashLoopBackOff",
            SyncErrorReason::RunContainerError => "RunContainerError",
            SyncErrorReason::KillContainerError => "KillContainerError",
            SyncErrorReason::CreatePodSandboxError => "CreatePodSandboxError",
            SyncErrorReason::ConfigPodSandboxError => "ConfigPodSandboxError",
            SyncErrorReason::KillPodSandboxError => "KillPodSandboxError",
            SyncErrorReason::CreateContainerConfigError => "CreateContainerConfigError",
            SyncErrorReason::CreateContainerError => "CreateContainerError",
            SyncErrorReason::ErrImagePull => "ErrImagePull",
            SyncErrorReason::ImagePullBackOff => "ImagePullBackOff",
            SyncErrorReason::ErrImageNeverPull => "ErrImageNeverPull",
            SyncErrorReason::InvalidImageName => "InvalidImageName",
            SyncErrorReason::ImageInspectError => "ImageInspectError",
            SyncErrorReason::PostStartHookError => "PostStartHookError",
            SyncErrorReason::ResizeError => "ResizeError",
        }
    }

    /// Backoff reasons are expected states, not sync failures (upstream's
    /// kubelet does not return an error when these are the only failures).
    pub fn is_backoff(self) -> bool {
        matches!(
            self,
            SyncErrorReason::CrashLoopBackOff | SyncErrorReason::ImagePullBackOff
        )
    }
}

impl fmt::Display for SyncErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed step: reason and human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncError {
    /// Upstream reason.
    pub reason: SyncErrorReason,
    /// Message for the waiting state and the event.
    pub message: String,
}

impl SyncError {
    /// A failure with `reason` and `message`.
    pub fn new(reason: SyncErrorReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// One step and its outcome (upstream `SyncResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResult {
    /// The step.
    pub action: SyncAction,
    /// Container name, sandbox id or pod (`name_ns(uid)`), per action.
    pub target: String,
    /// `None` on success.
    pub error: Option<SyncError>,
}

impl SyncResult {
    /// A successful step.
    pub fn ok(action: SyncAction, target: impl Into<String>) -> Self {
        Self {
            action,
            target: target.into(),
            error: None,
        }
    }

    /// A failed step.
    pub fn failed(action: SyncAction, target: impl Into<String>, error: SyncError) -> Self {
        Self {
            action,
            target: target.into(),
            error: Some(error),
        }
    }
}

/// Every step of one sync or kill, in order (upstream `PodSyncResult`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSyncResult {
    /// The steps.
    pub results: Vec<SyncResult>,
    /// A failure outside any step (e.g. the new sandbox's status unreadable).
    pub sync_error: Option<String>,
}

impl PodSyncResult {
    /// Records a step.
    pub fn add(&mut self, result: SyncResult) {
        self.results.push(result);
    }

    /// Appends the steps (and sync error) of `other`.
    pub fn extend(&mut self, other: PodSyncResult) {
        self.results.extend(other.results);
        if self.sync_error.is_none() {
            self.sync_error = other.sync_error;
        }
    }

    /// True when no step failed.
    pub fn is_ok(&self) -> bool {
        self.sync_error.is_none() && self.results.iter().all(|r| r.error.is_none())
    }

    /// True when something failed, and not only by being in backoff (then
    /// the caller should report an error; backoff alone is expected).
    pub fn has_real_errors(&self) -> bool {
        self.sync_error.is_some()
            || self
                .results
                .iter()
                .any(|r| r.error.as_ref().is_some_and(|e| !e.reason.is_backoff()))
    }

    /// Whether the sync did more than upstream records on every sync (the
    /// sandbox config built for containers to start, `ConfigPodSandbox`):
    /// any other step, a failed one included (its waiting reason is news),
    /// or a failure outside the steps. When false the runtime was not asked
    /// to change anything and the status read before the sync still stands.
    ///
    /// ```
    /// use actlet::kuberuntime::sync_result::{PodSyncResult, SyncAction, SyncResult};
    /// let mut idle = PodSyncResult::default();
    /// idle.add(SyncResult::ok(SyncAction::ConfigPodSandbox, "sandbox-1"));
    /// assert!(!idle.did_work());
    /// let mut started = idle.clone();
    /// started.add(SyncResult::ok(SyncAction::StartContainer, "app"));
    /// assert!(started.did_work());
    /// ```
    pub fn did_work(&self) -> bool {
        self.sync_error.is_some()
            || self
                .results
                .iter()
                .any(|r| r.action != SyncAction::ConfigPodSandbox || r.error.is_some())
    }

    /// The failures, as upstream's aggregate error message; `None` when ok.
    pub fn error_message(&self) -> Option<String> {
        let mut parts: Vec<String> = self
            .sync_error
            .iter()
            .map(|e| format!("failed to SyncPod: {e}"))
            .collect();
        for r in &self.results {
            if let Some(e) = &r.error {
                parts.push(format!(
                    "failed to {:?} for {:?} with {}: {:?}",
                    r.action.as_str(),
                    r.target,
                    e.reason,
                    e.message
                ));
            }
        }
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(format!("[{}]", parts.join(", "))),
        }
    }

    /// The last failure of `action` on `target` (e.g. a container's waiting
    /// reason after `StartContainer`).
    pub fn failure_of(&self, action: SyncAction, target: &str) -> Option<&SyncError> {
        self.results
            .iter()
            .rev()
            .filter(|r| r.action == action && r.target == target)
            .find_map(|r| r.error.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_upstreams() {
        assert_eq!(SyncAction::StartContainer.as_str(), "StartContainer");
        assert_eq!(SyncAction::KillPodSandbox.as_str(), "KillPodSandbox");
        assert_eq!(SyncErrorReason::CrashLoopBackOff.to_string(), "CrashLoopBackOff");
        assert_eq!(SyncErrorReason::ErrImageNeverPull.as_str(), "ErrImageNeverPull");
        assert_eq!(
            SyncErrorReason::CreateContainerConfigError.as_str(),
            "CreateContainerConfigError"
        );
    }

    #[test]
    fn backoff_only_results_are_not_real_errors() {
        let mut r = PodSyncResult::default();
        r.add(SyncResult::ok(SyncAction::StartContainer, "a"));
        assert!(r.is_ok() && !r.has_real_errors() && r.error_message().is_none());
        r.add(SyncResult::failed(
            SyncAction::StartContainer,
            "b",
            SyncError::new(SyncErrorReason::CrashLoopBackOff, "back-off 10s"),
        ));
        assert!(!r.is_ok() && !r.has_real_errors());
        r.add(SyncResult::failed(
            SyncAction::StartContainer,
            "c",
            SyncError::new(SyncErrorReason::ErrImagePull, "nope"),
        ));
        assert!(r.has_real_errors());
        assert_eq!(
            r.failure_of(SyncAction::StartContainer, "b").map(|e| e.reason),
            Some(SyncErrorReason::CrashLoopBackOff)
        );
        assert_eq!(r.failure_of(SyncAction::StartContainer, "a"), None);
    }

    #[test]
    fn error_message_aggregates_like_upstream() {
        let mut r = PodSyncResult::default();
        r.add(SyncResult::failed(
            SyncAction::StartContainer,
            "app",
            SyncError::new(SyncErrorReason::CrashLoopBackOff, "m"),
        ));
        assert_eq!(
            r.error_message().as_deref(),
            Some(r#"failed to "StartContainer" for "app" with CrashLoopBackOff: "m""#)
        );
        let mut other = PodSyncResult {
            sync_error: Some("boom".into()),
            ..Default::default()
        };
        other.add(SyncResult::ok(SyncAction::KillPodSandbox, "u"));
        r.extend(other);
        assert_eq!(r.results.len(), 2);
        assert!(
            r.error_message()
                .is_some_and(|m| m.starts_with("[failed to SyncPod: boom, "))
        );
    }
}
