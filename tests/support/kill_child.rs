//! [`kill_child`]: kills a child of a running kubelet's root supervisor
//! through the root (`KillChild`), as the chaos scenarios on the mock do;
//! the root restarts it by its policy. Included with `#[path]`.
#![allow(dead_code)]

use actlet::Kubelet;
use actlet::actors::supervisor::KillChild;

/// Kills `root/<actor>` of `kubelet`; panics if the root is gone or has no such child.
pub async fn kill_child(kubelet: &Kubelet, actor: &str) {
    kubelet
        .root
        .addr()
        .send(KillChild(actor.into()))
        .await
        .expect("root reachable")
        .unwrap_or_else(|e| panic!("kill {actor}: {e}"));
}

/// Asserts that `root/<actor>` of `kubelet` runs again after `times` kills
/// (restarted that often, the last failure a kill) and that the root still runs.
pub fn assert_restarted_after_kills(kubelet: &Kubelet, actor: &str, times: u64) {
    use actlet::actors::supervisor::{ChildState, ExitReason};
    let info = kubelet.tree().get(&format!("root/{actor}")).expect("actor in the tree");
    assert_eq!((info.state, info.restarts), (ChildState::Running, times), "{actor}");
    assert_eq!(info.last_failure.map(|f| f.reason), Some(ExitReason::Killed), "{actor}");
    assert_eq!(kubelet.root.exit_reason(), None, "{actor}: the root stopped");
}
