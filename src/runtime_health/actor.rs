//! [`RuntimeHealth`]: calls CRI `Status` every period and publishes the verdict.

use std::time::Duration;

use actix::prelude::*;
use tokio::sync::watch;

use super::verdict::verdict;
use crate::cri::SharedRuntime;
use crate::cri::v1::StatusRequest;
use crate::messages::runtime_health::RuntimeHealthChanged;

/// Upstream's runtime status check period.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(5);

/// Polls the runtime's `Status` and publishes [`RuntimeHealthChanged`] on a
/// watch channel (subscribers see the latest verdict, never a backlog).
///
/// One check runs at a time; a check that takes longer than the period delays
/// the next one instead of piling up calls on a slow runtime.
pub struct RuntimeHealth {
    runtime: SharedRuntime,
    period: Duration,
    tx: watch::Sender<RuntimeHealthChanged>,
    checking: bool,
}

impl RuntimeHealth {
    /// A checker publishing on `tx`.
    pub fn new(runtime: SharedRuntime, period: Duration, tx: watch::Sender<RuntimeHealthChanged>) -> Self {
        Self {
            runtime,
            period,
            tx,
            checking: false,
        }
    }

    /// A channel whose initial value says "not checked yet" (not ready).
    pub fn channel() -> (
        watch::Sender<RuntimeHealthChanged>,
        watch::Receiver<RuntimeHealthChanged>,
    ) {
        watch::channel(RuntimeHealthChanged {
            runtime_ready: false,
            network_ready: false,
            message: "container runtime status check may not have completed yet".into(),
            features: None,
        })
    }

    fn check(&mut self, ctx: &mut Context<Self>) {
        if self.checking {
            return;
        }
        self.checking = true;
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { runtime.status(StatusRequest { verbose: false }).await }
                .into_actor(self)
                .map(|result, act, _ctx| {
                    act.checking = false;
                    let mut v = verdict(&result);
                    act.tx.send_if_modified(|cur| {
                        if result.is_err() {
                            v.features = cur.features; // a failed check says nothing about them
                        }
                        if *cur == v {
                            return false;
                        }
                        if v.runtime_ready && v.network_ready {
                            tracing::info!("container runtime is ready");
                        } else {
                            tracing::warn!(reason = %v.message, "container runtime not ready");
                        }
                        *cur = v;
                        true
                    });
                }),
        );
    }
}

impl Actor for RuntimeHealth {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.check(ctx);
        ctx.run_interval(self.period, |act, ctx| act.check(ctx));
    }
}
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cri::mock::MockRuntime;

    #[test]
    fn publishes_ready_then_down_then_ready_again() {
        let sys = actix_rt::System::with_tokio_rt(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap()
        });
        sys.block_on(async {
            let mock = Arc::new(MockRuntime::new());
            let (tx, mut rx) = RuntimeHealth::channel();
            let _addr = RuntimeHealth::new(mock.clone(), DEFAULT_PERIOD, tx).start();
            rx.changed().await.unwrap();
            assert!(rx.borrow_and_update().runtime_ready);
            mock.set_down(true);
            rx.changed().await.unwrap();
            let v = rx.borrow_and_update().clone();
            assert!(!v.runtime_ready);
            assert!(v.message.contains("container runtime is down"), "{}", v.message);
            mock.set_down(false);
            rx.changed().await.unwrap();
            assert!(rx.borrow_and_update().runtime_ready);
        });
    }
}
