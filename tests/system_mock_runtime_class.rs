//! `spec.runtimeClassName` (upstream `pkg/kubelet/runtimeclass`) on the
//! assembled kubelet with the mock CRI: the class's handler goes to
//! `RunPodSandbox`; an unknown class fails the sandbox step with upstream's
//! message (event `FailedCreatePodSandBox`) and nothing is created; a class
//! added later is picked up by the next sync.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::runtime_class::RuntimeClasses;
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};

type Seen = (String, String);

fn class_pod(name: &str, class: &str) -> k8s_openapi::api::core::v1::Pod {
    let class = class.to_string();
    PodBuilder::new(name)
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .modify(move |p| p.spec.as_mut().expect("spec").runtime_class_name = Some(class))
        .build()
}

#[test]
fn the_class_handler_reaches_the_runtime_and_unknown_classes_fail_the_sandbox() {
    run_paused(async {
        let mock = MockRuntime::builder().runtime_handler("runsc").build();
        let classes = RuntimeClasses::new();
        classes.insert("gvisor", "runsc");
        let events: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = events.clone();
        let c = classes.clone();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| {
                b.runtime_classes(c)
                    .on_event(move |e| log.lock().unwrap().push((e.reason, e.message)))
            })
            .start();
        node.set_pods(vec![class_pod("sandboxed", "gvisor"), class_pod("lost", "kata")]);
        node.wait_for_phase("default", "sandboxed", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let handler = |pod: &str| {
            mock.snapshot()
                .sandboxes
                .into_iter()
                .find(|s| s.metadata.as_ref().is_some_and(|m| m.name == pod))
                .map(|s| s.runtime_handler)
        };
        assert_eq!(handler("sandboxed").as_deref(), Some("runsc"));
        let wanted = r#"runtimeclass.node.k8s.io "kata" not found"#;
        wait_until(
            || {
                events
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|(r, m)| r == "FailedCreatePodSandBox" && m.contains(wanted))
            },
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no FailedCreatePodSandBox naming the class: {:?}",
                events.lock().unwrap()
            )
        });
        assert_eq!(handler("lost"), None, "no sandbox for an unknown class");
        assert_eq!(
            node.status("default", "lost").and_then(|s| s.phase).as_deref(),
            Some("Pending")
        );

        // The class appears: the next sync creates the sandbox with its handler.
        classes.insert("kata", "runsc");
        node.wait_for_phase("default", "lost", "Running", Duration::from_secs(120))
            .await
            .unwrap();
        assert_eq!(handler("lost").as_deref(), Some("runsc"));
    });
}
