//! The chaos suite's invariants, written once and checked after every
//! scenario (`tests/chaos_*.rs`), whatever the runtime (containerd or the mock)
//! and whatever says what the API holds (a real API server, or the status
//! manager's cache on the mock).
//!
//! A [`World`] is one look at both sides: the pods as the API (or the status
//! cache) reports them, and the sandboxes and containers as the CRI lists them.
//! Each check returns the violations it found (empty = holds), so a scenario
//! can poll until the world converges ([`World::violations`]) and fail with
//! every violation and the whole picture when it does not.
//!
//! Invariants (issue #10, item 8):
//! - **no duplicate sandboxes**: at most one ready sandbox per pod UID; with
//!   [`Expect::one_sandbox`] exactly one sandbox (any state) per live pod, i.e.
//!   the chaos never made actlet recreate a healthy pod's sandbox;
//! - **no restart of a healthy container**: every container of the
//!   [`Baseline`] is still the running one, same id, restartCount 0;
//! - **no status lost (API equals the runtime)**: every live pod is Running in
//!   the API with one running status per container whose id is the running
//!   container of that name in the pod's ready sandbox;
//! - **nothing lost, nothing left over**: the API holds exactly the expected
//!   pods, and nothing runs in the runtime for any other pod (of the scenario's
//!   namespace).
//!
//! Node readiness is [`node_ready`]. Included with `#[path]`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use actlet::cri::v1;
use k8s_openapi::api::core::v1::{Node, Pod, PodStatus};

const UID_LABEL: &str = "io.kubernetes.pod.uid";
const NAME_LABEL: &str = "io.kubernetes.pod.name";
const NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
const CONTAINER_LABEL: &str = "io.kubernetes.container.name";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// One container status as the API reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusView {
    pub name: String,
    /// The runtime id without its `<runtime>://` prefix.
    pub id: Option<String>,
    pub running: bool,
    pub restart_count: i32,
}

/// One pod as the API reports it.
#[derive(Clone, Debug)]
pub struct PodView {
    pub uid: String,
    pub name: String,
    pub namespace: String,
    pub phase: String,
    pub deleting: bool,
    /// The container names of the spec (regular containers).
    pub spec_containers: Vec<String>,
    pub statuses: Vec<StatusView>,
}

/// One sandbox as the CRI lists it.
#[derive(Clone, Debug)]
pub struct SandboxView {
    pub id: String,
    pub uid: String,
    pub name: String,
    pub namespace: String,
    pub ready: bool,
}

/// One container as the CRI lists it.
#[derive(Clone, Debug)]
pub struct ContainerView {
    pub id: String,
    pub sandbox_id: String,
    pub uid: String,
    pub name: String,
    pub running: bool,
}

/// The API's pods and the runtime's sandboxes and containers, seen together.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub pods: Vec<PodView>,
    pub sandboxes: Vec<SandboxView>,
    pub containers: Vec<ContainerView>,
}

/// What a scenario expects once the chaos is over.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// Exactly these pod names live (in the API and the runtime), no others.
    pub live: BTreeSet<String>,
    /// Exactly one sandbox (in any state) per live pod, not just one ready one.
    pub one_sandbox: bool,
}

/// The running container ids of healthy pods before the chaos: `(pod, container) → id`.
pub type Baseline = BTreeMap<(String, String), String>;

fn strip_scheme(id: &str) -> String {
    id.split_once("://").map_or(id, |(_, rest)| rest).to_string()
}

fn label(labels: &std::collections::HashMap<String, String>, key: &str) -> String {
    labels.get(key).cloned().unwrap_or_default()
}

impl PodView {
    /// From an API pod. A mirror pod stands for its static pod, whose UID
    /// (the runtime's) its `kubernetes.io/config.mirror` annotation holds.
    pub fn from_pod(p: &Pod) -> Self {
        let mirror = p.metadata.annotations.as_ref().and_then(|a| a.get(MIRROR_ANNOTATION));
        let mut view = Self::from_status(
            mirror
                .map(String::as_str)
                .or(p.metadata.uid.as_deref())
                .unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default(),
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.status.as_ref(),
        );
        view.deleting = p.metadata.deletion_timestamp.is_some();
        view.spec_containers = p
            .spec
            .iter()
            .flat_map(|s| s.containers.iter().map(|c| c.name.clone()))
            .collect();
        view
    }

    /// From a bare status (the status manager's cache on the mock); the spec's
    /// containers are taken to be the ones the status names.
    pub fn from_status(uid: &str, name: &str, namespace: &str, status: Option<&PodStatus>) -> Self {
        let statuses: Vec<StatusView> = status
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| StatusView {
                running: c.state.as_ref().is_some_and(|s| s.running.is_some()),
                id: c.container_id.as_deref().map(strip_scheme),
                name: c.name,
                restart_count: c.restart_count,
            })
            .collect();
        PodView {
            uid: uid.into(),
            name: name.into(),
            namespace: namespace.into(),
            phase: status.and_then(|s| s.phase.clone()).unwrap_or_default(),
            deleting: false,
            spec_containers: statuses.iter().map(|s| s.name.clone()).collect(),
            statuses,
        }
    }
}

impl World {
    /// Builds a world from the API's pods and the CRI's lists, keeping only
    /// sandboxes (and their containers) whose pod namespace passes `keep_ns`.
    pub fn new(
        pods: Vec<PodView>,
        sandboxes: &[v1::PodSandbox],
        containers: &[v1::Container],
        keep_ns: impl Fn(&str) -> bool,
    ) -> Self {
        let sandboxes: Vec<SandboxView> = sandboxes
            .iter()
            .map(|s| SandboxView {
                id: s.id.clone(),
                uid: label(&s.labels, UID_LABEL),
                name: label(&s.labels, NAME_LABEL),
                namespace: label(&s.labels, NAMESPACE_LABEL),
                ready: s.state == v1::PodSandboxState::SandboxReady as i32,
            })
            .filter(|s| keep_ns(&s.namespace))
            .collect();
        let ids: BTreeSet<&str> = sandboxes.iter().map(|s| s.id.as_str()).collect();
        let containers = containers
            .iter()
            .filter(|c| ids.contains(c.pod_sandbox_id.as_str()))
            .map(|c| ContainerView {
                id: c.id.clone(),
                sandbox_id: c.pod_sandbox_id.clone(),
                uid: label(&c.labels, UID_LABEL),
                name: c
                    .metadata
                    .as_ref()
                    .map(|m| m.name.clone())
                    .unwrap_or_else(|| label(&c.labels, CONTAINER_LABEL)),
                running: c.state == v1::ContainerState::ContainerRunning as i32,
            })
            .collect();
        World {
            pods,
            sandboxes,
            containers,
        }
    }

    /// The live (not deleting) API pod called `name`.
    pub fn pod(&self, name: &str) -> Option<&PodView> {
        self.pods.iter().find(|p| p.name == name && !p.deleting)
    }

    /// The running container ids of `pods` (all their containers), for [`Baseline`].
    pub fn baseline(&self, pods: &[String]) -> Baseline {
        let mut out = Baseline::new();
        for name in pods {
            let Some(p) = self.pod(name) else { continue };
            for s in &p.statuses {
                if let Some(id) = &s.id {
                    out.insert((name.clone(), s.name.clone()), id.clone());
                }
            }
        }
        out
    }

    /// Every violated invariant (see the module docs); empty when all hold.
    pub fn violations(&self, expect: &Expect, baseline: &Baseline) -> Vec<String> {
        let mut v = self.duplicate_sandboxes(expect);
        v.extend(self.restarted(baseline));
        v.extend(self.api_differs_from_runtime(expect));
        v.extend(self.lost_or_left_over(expect));
        v
    }

    /// No duplicate sandboxes.
    pub fn duplicate_sandboxes(&self, expect: &Expect) -> Vec<String> {
        let mut v = Vec::new();
        let mut ready: BTreeMap<&str, usize> = BTreeMap::new();
        let mut all: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &self.sandboxes {
            *all.entry(&s.uid).or_default() += 1;
            if s.ready {
                *ready.entry(&s.uid).or_default() += 1;
            }
        }
        for (uid, n) in &ready {
            if *n > 1 {
                v.push(format!("pod uid {uid}: {n} ready sandboxes"));
            }
        }
        if expect.one_sandbox {
            for name in &expect.live {
                let Some(p) = self.pod(name) else { continue };
                let n = all.get(p.uid.as_str()).copied().unwrap_or(0);
                if n != 1 {
                    v.push(format!("{name}: {n} sandboxes (any state), want exactly 1"));
                }
            }
        }
        v
    }

    /// No restart of a healthy container.
    pub fn restarted(&self, baseline: &Baseline) -> Vec<String> {
        let mut v = Vec::new();
        for ((pod, container), id) in baseline {
            let Some(p) = self.pod(pod) else {
                v.push(format!("{pod}: healthy pod gone from the API"));
                continue;
            };
            let running: Vec<&ContainerView> = self
                .containers
                .iter()
                .filter(|c| c.uid == p.uid && c.name == *container && c.running)
                .collect();
            if running.len() != 1 || running[0].id != *id {
                let ids: Vec<&str> = running.iter().map(|c| c.id.as_str()).collect();
                v.push(format!(
                    "{pod}/{container}: running in the runtime {ids:?}, was {id} (restarted or lost)"
                ));
            }
            match p.statuses.iter().find(|s| s.name == *container) {
                Some(s) if s.restart_count != 0 => {
                    v.push(format!("{pod}/{container}: restartCount {}", s.restart_count))
                }
                Some(s) if s.id.as_deref() != Some(id.as_str()) => {
                    v.push(format!("{pod}/{container}: API container id {:?}, was {id}", s.id))
                }
                _ => {}
            }
        }
        v
    }

    /// No status lost: the API says what the runtime runs.
    pub fn api_differs_from_runtime(&self, expect: &Expect) -> Vec<String> {
        let mut v = Vec::new();
        for name in &expect.live {
            let Some(p) = self.pod(name) else { continue };
            if p.phase != "Running" {
                v.push(format!("{name}: phase {:?} in the API, want Running", p.phase));
            }
            let sandbox: Vec<&SandboxView> = self.sandboxes.iter().filter(|s| s.uid == p.uid && s.ready).collect();
            let [sandbox] = sandbox[..] else {
                v.push(format!("{name}: {} ready sandboxes in the runtime", sandbox.len()));
                continue;
            };
            for c in &p.spec_containers {
                let running: Vec<&ContainerView> = self
                    .containers
                    .iter()
                    .filter(|x| x.sandbox_id == sandbox.id && x.name == *c && x.running)
                    .collect();
                let statuses: Vec<&StatusView> = p.statuses.iter().filter(|s| s.name == *c).collect();
                match (&running[..], &statuses[..]) {
                    ([r], [s]) if s.running && s.id.as_deref() == Some(r.id.as_str()) => {}
                    _ => v.push(format!(
                        "{name}/{c}: API {statuses:?} but runtime runs {:?}",
                        running.iter().map(|r| &r.id).collect::<Vec<_>>()
                    )),
                }
            }
        }
        v
    }

    /// Nothing lost, nothing duplicated, nothing left running.
    pub fn lost_or_left_over(&self, expect: &Expect) -> Vec<String> {
        let mut v = Vec::new();
        let names: BTreeSet<String> = self.pods.iter().map(|p| p.name.clone()).collect();
        for name in &expect.live {
            if self.pod(name).is_none() {
                v.push(format!("{name}: lost (not in the API, or being deleted)"));
            }
        }
        for name in names.difference(&expect.live) {
            v.push(format!("{name}: in the API but should be gone"));
        }
        let live_uids: BTreeSet<&str> = expect
            .live
            .iter()
            .filter_map(|n| self.pod(n))
            .map(|p| p.uid.as_str())
            .collect();
        for s in self
            .sandboxes
            .iter()
            .filter(|s| s.ready && !live_uids.contains(s.uid.as_str()))
        {
            v.push(format!(
                "sandbox {} of {} (uid {}) still ready",
                short(&s.id),
                s.name,
                s.uid
            ));
        }
        for c in self
            .containers
            .iter()
            .filter(|c| c.running && !live_uids.contains(c.uid.as_str()))
        {
            v.push(format!(
                "container {} {} of uid {} still running",
                short(&c.id),
                c.name,
                c.uid
            ));
        }
        v
    }

    /// The whole picture, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = String::from("API:\n");
        for p in &self.pods {
            let _ = writeln!(
                out,
                "  {} uid={} phase={} deleting={} {:?}",
                p.name, p.uid, p.phase, p.deleting, p.statuses
            );
        }
        out += "runtime:\n";
        for s in &self.sandboxes {
            let _ = writeln!(out, "  sandbox {} {} ready={}", short(&s.id), s.name, s.ready);
            for c in self.containers.iter().filter(|c| c.sandbox_id == s.id) {
                let _ = writeln!(out, "    container {} {} running={}", short(&c.id), c.name, c.running);
            }
        }
        out
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// The node's Ready condition is True (`Err` says what it is instead).
pub fn node_ready(node: Option<&Node>) -> Result<(), String> {
    let Some(node) = node else {
        return Err("no Node object".into());
    };
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(format!("Ready={} ({:?}: {:?})", c.status, c.reason, c.message)),
        None => Err("no Ready condition".into()),
    }
}

/// `ACTLET_CHAOS_SOAK_MINUTES=N`: repeat the scenarios for N minutes (default: once).
pub fn soak() -> Option<std::time::Duration> {
    let minutes: u64 = std::env::var("ACTLET_CHAOS_SOAK_MINUTES").ok()?.parse().ok()?;
    (minutes > 0).then(|| std::time::Duration::from_secs(minutes * 60))
}

/// Runs `round` once, or again and again until the soak time is over.
pub async fn rounds(test: &str, mut round: impl AsyncFnMut(u32)) {
    let until = soak().map(|d| std::time::Instant::now() + d);
    let mut n = 0;
    loop {
        round(n).await;
        n += 1;
        match until {
            Some(t) if std::time::Instant::now() < t => {
                let line = format!(
                    "[{test}] soak: round {n} done, {:?} left\n",
                    t - std::time::Instant::now()
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
            _ => return,
        }
    }
}
