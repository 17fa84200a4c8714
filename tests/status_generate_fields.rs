//! `generate_api_pod_status`: readiness, probes, times, IPs, ordering, QoS and
//! the `ContainerStatusUnknown` cases.

#[path = "support/status.rs"]
mod fixtures;

use std::collections::HashMap;

use actlet::kuberuntime::pod_status::ContainerState;
use actlet::status::{StatusInput, generate_api_pod_status};
use fixtures::*;
use k8s_openapi::api::core::v1::Pod;

const GATED: &str = r#"
metadata: {name: gated, uid: u1}
spec:
  readinessGates: [{conditionType: example.com/lb}]
  containers: [{name: app, image: app}]
"#;

const PROBED: &str = r#"
metadata: {name: probed, uid: u1}
spec:
  containers:
  - name: app
    image: app
    readinessProbe: {httpGet: {path: /ready, port: 8080}}
    startupProbe: {tcpSocket: {port: 8080}}
"#;

fn running_pod(p: &Pod) -> actlet::kuberuntime::pod_status::RuntimePodStatus {
    runtime(
        p,
        vec![sandbox(&["10.0.0.5"])],
        vec![ctr("c1", "app", ContainerState::Running, 20)],
    )
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn readiness_gates_read_foreign_conditions() {
    let p = pod(GATED);
    let rt = running_pod(&p);
    let st = generate_api_pod_status(&StatusInput::new(&p, &rt, at(1)));
    assert_eq!(cond(&st, "ContainersReady").0, "True");
    assert_eq!(
        cond(&st, "Ready"),
        (
            s("False"),
            Some(s("ReadinessGatesNotReady")),
            Some(s(
                "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."
            ))
        )
    );

    let previous = pod_status("conditions: [{type: example.com/lb, status: 'True'}]");
    let st = generate_api_pod_status(&StatusInput {
        previous: Some(&previous),
        ..StatusInput::new(&p, &rt, at(1))
    });
    assert_eq!(cond(&st, "Ready").0, "True");
    assert_eq!(
        cond(&st, "example.com/lb").0,
        "True",
        "the gate condition is carried over"
    );

    let mut api_says_no = p.clone();
    api_says_no.status = Some(pod_status("conditions: [{type: example.com/lb, status: 'False'}]"));
    let st = generate_api_pod_status(&StatusInput {
        previous: Some(&previous),
        ..StatusInput::new(&api_says_no, &rt, at(1))
    });
    assert_eq!(
        cond(&st, "Ready").2.as_deref(),
        Some("the status of pod readiness gate \"example.com/lb\" is not \"True\", but False"),
        "the API's foreign conditions win over the manager's"
    );
}

#[test]
fn probes_drive_started_and_ready() {
    let p = pod(PROBED);
    let rt = running_pod(&p);
    let none = HashMap::new();
    let yes = HashMap::from([(s("c1"), true)]);
    let cases = [
        (&none, &none, (false, false)),
        (&none, &yes, (true, false)),
        (&yes, &yes, (true, true)),
    ];
    for (readiness, started, want) in cases {
        let st = generate_api_pod_status(&StatusInput {
            readiness,
            started,
            ..StatusInput::new(&p, &rt, at(1))
        });
        let app = container(&st, "app");
        assert_eq!((app.started.unwrap(), app.ready), want);
        assert_eq!(cond(&st, "Ready").0 == "True", want.1);
        assert_eq!(phase(&st), "Running");
    }
}

#[test]
fn transition_times_and_start_time_are_preserved() {
    let p = pod(GATED
        .replace("readinessGates: [{conditionType: example.com/lb}]", "")
        .as_str());
    let pending = runtime(&p, vec![], vec![]);
    let first = generate_api_pod_status(&StatusInput::new(&p, &pending, at(100)));
    let running = running_pod(&p);
    let second = generate_api_pod_status(&StatusInput {
        previous: Some(&first),
        ..StatusInput::new(&p, &running, at(200))
    });
    assert_eq!(transition(&second, "Ready"), Some(at(200)), "Ready flipped");
    assert_eq!(transition(&second, "PodReadyToStartContainers"), Some(at(200)));
    assert_eq!(transition(&second, "PodScheduled"), Some(at(100)), "unchanged");
    assert_eq!(transition(&second, "Initialized"), Some(at(100)), "unchanged");
    assert_eq!(second.start_time.as_ref().map(|t| t.0), Some(at(100)));
    let third = generate_api_pod_status(&StatusInput {
        previous: Some(&second),
        ..StatusInput::new(&p, &running, at(300))
    });
    assert_eq!(transition(&third, "Ready"), Some(at(200)));
    assert_eq!(
        third,
        generate_api_pod_status(&StatusInput {
            previous: Some(&second),
            ..StatusInput::new(&p, &running, at(300))
        })
    );

    let mut restarted_kubelet = p.clone();
    restarted_kubelet.status = Some(pod_status("startTime: '1970-01-01T00:00:42Z'"));
    let st = generate_api_pod_status(&StatusInput::new(&restarted_kubelet, &running, at(500)));
    assert_eq!(
        st.start_time.as_ref().map(|t| t.0),
        Some(at(42)),
        "the API's start time is kept"
    );
}

#[test]
fn host_network_pod_gets_the_host_ip() {
    let p = pod(r#"
metadata: {name: hn, uid: u1}
spec:
  hostNetwork: true
  containers: [{name: app, image: app}]
"#);
    let mut sb = sandbox(&[]);
    sb.host_network = true;
    let rt = runtime(&p, vec![sb], vec![ctr("c1", "app", ContainerState::Running, 20)]);
    let st = generate_api_pod_status(&StatusInput {
        host_ip: Some(s("192.168.1.10")),
        ..StatusInput::new(&p, &rt, at(1))
    });
    assert_eq!(st.pod_ip.as_deref(), Some("192.168.1.10"));
    assert_eq!(st.pod_ips.unwrap()[0].ip, "192.168.1.10");
    assert_eq!(st.host_ips.unwrap()[0].ip, "192.168.1.10");
    assert_eq!(
        cond(
            &generate_api_pod_status(&StatusInput::new(&p, &rt, at(1))),
            "PodReadyToStartContainers"
        )
        .0,
        "True"
    );

    let pod_net = pod("{metadata: {name: pn, uid: u2}, spec: {containers: [{name: app, image: app}]}}");
    let no_ip = runtime(&pod_net, vec![sandbox(&[])], vec![]);
    let st = generate_api_pod_status(&StatusInput {
        host_ip: Some(s("192.168.1.10")),
        ..StatusInput::new(&pod_net, &no_ip, at(1))
    });
    assert_eq!(
        (st.pod_ip.clone(), cond(&st, "PodReadyToStartContainers").0),
        (None, s("False")),
        "sandbox without IP"
    );
}

#[test]
fn vanished_running_container_is_reported_unknown() {
    let p = pod(GATED);
    let rt = running_pod(&p);
    let was_running = generate_api_pod_status(&StatusInput::new(&p, &rt, at(1)));
    let gone = runtime(&p, vec![sandbox(&["10.0.0.5"])], vec![]);
    let st = generate_api_pod_status(&StatusInput {
        previous: Some(&was_running),
        ..StatusInput::new(&p, &gone, at(2))
    });
    assert_eq!(
        states(&st, "app"),
        (
            s("waiting:ContainerCreating"),
            s("terminated:ContainerStatusUnknown:137")
        )
    );
    let last = container(&st, "app")
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap();
    assert_eq!(
        last.message.as_deref(),
        Some("The container could not be located when the pod was deleted.  The container used to be Running")
    );
    assert_eq!(container(&st, "app").restart_count, 1);
    assert_eq!(phase(&st), "Running", "known to have run: not back to Pending");

    let mut deleted = p.clone();
    deleted.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(2)));
    let st = generate_api_pod_status(&StatusInput {
        previous: Some(&was_running),
        ..StatusInput::new(&deleted, &gone, at(2))
    });
    assert_eq!(container(&st, "app").restart_count, 0, "a deleted pod does not restart");

    let mut unknown = ctr("c1", "app", ContainerState::Unknown, 20);
    unknown.restart_count = 3;
    let lost = runtime(&p, vec![sandbox(&["10.0.0.5"])], vec![unknown]);
    let st = generate_api_pod_status(&StatusInput {
        previous: Some(&was_running),
        ..StatusInput::new(&p, &lost, at(2))
    });
    assert_eq!(states(&st, "app").0, "terminated:ContainerStatusUnknown:137");
    let t = container(&st, "app")
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap();
    assert_eq!(
        t.message.as_deref(),
        Some("The container could not be located when the pod was terminated")
    );
    assert_eq!(container(&st, "app").restart_count, 1, "previous count + 1");
    let st = generate_api_pod_status(&StatusInput::new(&p, &lost, at(2)));
    assert_eq!(
        (states(&st, "app").0, phase(&st)),
        (s("waiting:"), "Pending"),
        "never seen running"
    );
}

#[test]
fn statuses_are_ordered_like_upstream() {
    let p = pod(r#"
metadata: {name: order, uid: u1}
spec:
  initContainers: [{name: second, image: x}, {name: first, image: x}]
  containers: [{name: zeta, image: z}, {name: alpha, image: a}]
  ephemeralContainers: [{name: debug, image: busybox}]
"#);
    let st = generate_api_pod_status(&StatusInput::new(&p, &runtime(&p, vec![], vec![]), at(1)));
    let names = |v: &Option<Vec<k8s_openapi::api::core::v1::ContainerStatus>>| {
        v.iter().flatten().map(|c| c.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(&st.container_statuses), ["alpha", "zeta"], "regular: by name");
    assert_eq!(
        names(&st.init_container_statuses),
        ["second", "first"],
        "init: spec order"
    );
    assert_eq!(names(&st.ephemeral_container_statuses), ["debug"]);
    assert_eq!(states(&st, "alpha").0, "waiting:PodInitializing");
}

#[test]
fn qos_class_and_runtime_name() {
    let p = pod(r#"
metadata: {name: g, uid: u1}
spec:
  containers:
  - name: app
    image: app
    resources: {limits: {cpu: 500m, memory: 128Mi}, requests: {cpu: "0.5", memory: 128Mi}}
"#);
    let rt = running_pod(&p);
    let st = generate_api_pod_status(&StatusInput {
        runtime_name: "cri-o",
        ..StatusInput::new(&p, &rt, at(1))
    });
    assert_eq!(st.qos_class.as_deref(), Some("Guaranteed"));
    assert_eq!(container(&st, "app").container_id.as_deref(), Some("cri-o://c1"));
}

#[test]
fn sidecar_counts_for_readiness_and_initialization() {
    let p = pod(r#"
metadata: {name: side, uid: u1}
spec:
  initContainers:
  - {name: proxy, image: envoy, restartPolicy: Always, readinessProbe: {exec: {command: ["true"]}}}
  containers: [{name: app, image: app}]
"#);
    let rt = runtime(
        &p,
        vec![sandbox(&["10.0.0.5"])],
        vec![
            ctr("p1", "proxy", ContainerState::Running, 20),
            ctr("c1", "app", ContainerState::Running, 30),
        ],
    );
    let st = generate_api_pod_status(&StatusInput::new(&p, &rt, at(1)));
    assert_eq!((phase(&st), cond(&st, "Initialized").0), ("Running", s("True")));
    assert_eq!(
        cond(&st, "ContainersReady").2.as_deref(),
        Some("containers with unready status: [proxy]")
    );
    let ready = HashMap::from([(s("containerd://p1"), true)]);
    let st = generate_api_pod_status(&StatusInput {
        readiness: &ready,
        ..StatusInput::new(&p, &rt, at(1))
    });
    assert_eq!(cond(&st, "Ready").0, "True");
}

#[test]
fn observed_generation_is_the_pods_generation_on_the_status_and_the_kubelets_conditions() {
    let mut p = pod(GATED);
    p.metadata.generation = Some(3);
    p.status = Some(pod_status(
        "conditions: [{type: example.com/lb, status: 'True', observedGeneration: 1}]",
    ));
    let rt = running_pod(&p);
    let st = generate_api_pod_status(&StatusInput::new(&p, &rt, at(1)));
    assert_eq!(st.observed_generation, Some(3));
    for c in st.conditions.iter().flatten() {
        let expected = if c.type_ == "example.com/lb" { Some(1) } else { Some(3) };
        assert_eq!(c.observed_generation, expected, "{}", c.type_);
    }
}
