//! The supervision tree through its public API only: a nested tree with
//! per-pod workers that come and go, a peer actor reading the live tree,
//! a crash, and an ordered shutdown.

use std::time::Duration;

use actix::prelude::*;
use actlet::actors::supervisor::{
    ChildRef, ChildSpec, ChildState, GetTree, RestartPolicy, StartChild, StopChild, Supervisor, SupervisorSpec,
};

struct PodWorker {
    generation: u64,
}

impl Actor for PodWorker {
    type Context = Context<Self>;
}

struct Generation;
impl Message for Generation {
    type Result = u64;
}
impl Handler<Generation> for PodWorker {
    type Result = u64;
    fn handle(&mut self, _: Generation, _: &mut Context<Self>) -> u64 {
        self.generation
    }
}

struct Explode;
impl Message for Explode {
    type Result = ();
}
impl Handler<Explode> for PodWorker {
    type Result = ();
    fn handle(&mut self, _: Explode, _: &mut Context<Self>) {
        panic!("pod worker exploded");
    }
}

fn pod(uid: &str) -> ChildSpec<PodWorker> {
    ChildSpec::with_context(format!("pod-{uid}"), |cx| PodWorker {
        generation: cx.generation(),
    })
    .restart(RestartPolicy::Transient)
}

/// A peer that only holds the supervisor's address and reads the tree.
struct Inspector {
    workers: ChildRef<Supervisor>,
}

impl Actor for Inspector {
    type Context = Context<Self>;
}

struct RunningPods;
impl Message for RunningPods {
    type Result = Vec<String>;
}
impl Handler<RunningPods> for Inspector {
    type Result = ResponseFuture<Vec<String>>;
    fn handle(&mut self, _: RunningPods, _: &mut Context<Self>) -> Self::Result {
        let request = self.workers.send(GetTree);
        Box::pin(async move {
            let tree = request.await.unwrap_or_default();
            tree.into_iter()
                .filter(|info| info.kind == "PodWorker" && info.state == ChildState::Running)
                .map(|info| info.path)
                .collect()
        })
    }
}

#[test]
fn per_pod_workers_under_a_nested_supervisor() {
    let system = System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    });
    system.block_on(async {
        let workers = SupervisorSpec::new("pod-workers").into_child_spec();
        let workers_ref = workers.child_ref();
        let root = SupervisorSpec::new("root").child(workers).start_root();
        let inspector = Inspector {
            workers: workers_ref.clone(),
        }
        .start();

        let (a, b) = (pod("a"), pod("b"));
        let (a_ref, b_ref) = (a.child_ref(), b.child_ref());
        for spec in [a, b] {
            workers_ref.send(StartChild(spec.into())).await.unwrap().unwrap();
        }
        let running = inspector.send(RunningPods).await.unwrap();
        assert_eq!(running, ["root/pod-workers/pod-a", "root/pod-workers/pod-b"]);

        assert!(a_ref.send(Explode).await.is_err());
        assert_eq!(a_ref.send(Generation).await, Ok(2), "restarted in place, same address");
        assert_eq!(b_ref.send(Generation).await, Ok(1), "its sibling was left alone");

        workers_ref.send(StopChild("pod-b".into())).await.unwrap().unwrap();
        let running = inspector.send(RunningPods).await.unwrap();
        assert_eq!(running, ["root/pod-workers/pod-a"]);
        assert!(
            b_ref.send(Generation).await.is_err(),
            "a removed pod's address is closed"
        );

        let info = root.tree().get("root/pod-workers/pod-a").unwrap();
        assert_eq!((info.restarts, info.generation), (1, 2));
        let report = root.shutdown(Duration::from_secs(5)).await.unwrap();
        assert_eq!(report.stopped, ["root/pod-workers"]);
        assert!(a_ref.send(Generation).await.is_err());
    });
}
