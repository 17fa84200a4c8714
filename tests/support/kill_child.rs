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
