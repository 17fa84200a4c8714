//! Helpers shared by the `config_*` tests (included with `#[path]`; as its
//! own test target it has no tests).
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use actix::{Actor, Context, Handler, Message, Recipient};
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Forwards every message it receives into a channel the test reads.
pub struct Forward<M>(UnboundedSender<M>);

impl<M: Message<Result = ()> + Send + Unpin + 'static> Actor for Forward<M> {
    type Context = Context<Self>;
}

impl<M: Message<Result = ()> + Send + Unpin + 'static> Handler<M> for Forward<M> {
    type Result = ();

    fn handle(&mut self, msg: M, _: &mut Self::Context) {
        let _ = self.0.send(msg);
    }
}

/// A recipient for `M` and the receiving end of what it gets.
pub fn recorder<M: Message<Result = ()> + Send + Unpin + 'static>() -> (Recipient<M>, UnboundedReceiver<M>) {
    let (tx, rx) = unbounded_channel();
    (Forward(tx).start().recipient(), rx)
}

/// Runs `test` on an actix System over a paused current-thread runtime:
/// time only advances when every task is idle (blocking-pool work holds it).
pub fn run_paused<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("tokio runtime")
    })
    .block_on(test());
}

/// Upper bound of a wait on real time; only reached when a test fails.
pub const WAIT: Duration = Duration::from_secs(5);
/// Upper bound of a wait on paused time: longer than any period under test,
/// and it costs no real time.
pub const VIRTUAL_WAIT: Duration = Duration::from_secs(600);

/// The next message, or a panic after `within`.
pub async fn next<M>(rx: &mut UnboundedReceiver<M>, within: Duration) -> M {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("timed out waiting for a message")
        .expect("channel open")
}

/// Skips messages until one satisfies `done`, or panics after `within`.
pub async fn next_matching<M>(rx: &mut UnboundedReceiver<M>, within: Duration, mut done: impl FnMut(&M) -> bool) -> M {
    let wait = async {
        loop {
            let msg = rx.recv().await.expect("channel open");
            if done(&msg) {
                return msg;
            }
        }
    };
    tokio::time::timeout(within, wait)
        .await
        .expect("timed out waiting for a matching message")
}

/// A static pod manifest (YAML) named `name` running `image`.
pub fn pod_yaml(name: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: main\n    image: {image}\n"
    )
}

/// Names of pods.
pub fn names(pods: &[std::sync::Arc<Pod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// The first container's image of a pod.
pub fn image(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or_default()
}
