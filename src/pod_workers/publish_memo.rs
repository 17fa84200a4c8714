//! [`PublishMemo`]: what a pod's last status publication was made of, so a
//! sync whose inputs are the same ones again skips generating, comparing and
//! sending an identical status.
//!
//! Status generation is a pure function of its inputs
//! ([`generate_api_pod_status`](crate::status::generate::generate_api_pod_status)):
//! the pod, its runtime status, the status manager's previous status, the
//! waiting reasons, the probe results and the resize state — and the clock,
//! which only stamps what the previous status does not hold yet (the start
//! time, a condition's transition). Once the status manager's status is the
//! one the last generation led to (the same allocation: an equal status is
//! not stored again), a generation from the same inputs gives the same
//! status, which the status manager would find unchanged. At 10,000 idle pods
//! that regeneration was ~40 % of a periodic resync's CPU.
//!
//! The memo is a cache owned by the pod worker instance: a restarted worker
//! starts without one and regenerates once. It holds the pod and the previous
//! status weakly (their contents are freed with the last strong reference; a
//! [`Weak`] still pins the address, so a new allocation cannot compare equal)
//! and the runtime status strongly (compared by value too: a relist reads an
//! equal status into a new allocation; the memo then holds the new one).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::kuberuntime::pod_status::RuntimePodStatus;

/// Why containers wait, by container name: (reason, message).
type Waiting = HashMap<String, (String, String)>;

/// What a status generation reads besides the pod, its runtime status,
/// the previous status and the waiting reasons: the probe results and the
/// resize state (all empty for most pods).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusExtras {
    /// Readiness probe results by container id.
    pub readiness: HashMap<String, bool>,
    /// Startup probe results by container id.
    pub started: HashMap<String, bool>,
    /// A running container does not run with its spec's resources yet.
    pub resize_in_progress: bool,
    /// Why the last resize failed.
    pub resize_error: Option<String>,
    /// A resize the node has not allocated: reason and message.
    pub resize_pending: Option<(String, String)>,
}

impl StatusExtras {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The inputs of one status generation, borrowed from the step.
#[derive(Clone, Copy, Debug)]
pub struct PublishInputs<'a> {
    /// The pod as synced (with the node's allocation applied).
    pub pod: &'a Arc<Pod>,
    /// The runtime status the status is generated from.
    pub runtime: &'a Arc<RuntimePodStatus>,
    /// The status manager's status of the pod, if any.
    pub previous: Option<&'a Arc<PodStatus>>,
    /// Waiting reasons from the last sync.
    pub waiting: &'a Waiting,
    /// Probe results and resize state.
    pub extras: &'a StatusExtras,
}

/// What a sync step decides on from the status it published.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Published {
    /// The phase is `Succeeded` or `Failed`.
    pub terminal: bool,
    /// `status.startTime` (for `activeDeadlineSeconds`).
    pub start_time: Option<Time>,
}

impl Published {
    /// What `status` says that a step decides on.
    pub fn of(status: &PodStatus) -> Self {
        Self {
            terminal: matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")),
            start_time: status.start_time.clone(),
        }
    }
}

/// The inputs that are rarely set (waiting reasons, probe results,
/// resizes), boxed so an idle pod's memo stays a few words.
type Rare = (Waiting, StatusExtras);

fn rare_of(i: &PublishInputs<'_>) -> Option<Box<Rare>> {
    (!i.waiting.is_empty() || !i.extras.is_empty()).then(|| Box::new((i.waiting.clone(), i.extras.clone())))
}

fn rare_matches(rare: Option<&Rare>, i: &PublishInputs<'_>) -> bool {
    match rare {
        None => i.waiting.is_empty() && i.extras.is_empty(),
        Some((waiting, extras)) => waiting == i.waiting && extras == i.extras,
    }
}

/// A pod's last status publication: its inputs and what it decided.
#[derive(Debug)]
pub struct PublishMemo {
    pod: Weak<Pod>,
    runtime: Arc<RuntimePodStatus>,
    previous: Option<Weak<PodStatus>>,
    rare: Option<Box<Rare>>,
    published: Published,
}

impl PublishMemo {
    /// The memo of a publication of `inputs` that decided `published`.
    pub fn new(inputs: &PublishInputs<'_>, published: Published) -> Self {
        Self {
            pod: Arc::downgrade(inputs.pod),
            runtime: inputs.runtime.clone(),
            previous: inputs.previous.map(Arc::downgrade),
            rare: rare_of(inputs),
            published,
        }
    }

    /// What the last publication decided, when `inputs` are its inputs
    /// again (the same pod and previous status, an equal runtime status,
    /// equal probe results, waiting reasons and resize state): then
    /// generating the status again would publish nothing new.
    pub fn reuse(&mut self, inputs: &PublishInputs<'_>) -> Option<Published> {
        let same_pod = std::ptr::eq(self.pod.as_ptr(), Arc::as_ptr(inputs.pod));
        let same_previous = match (&self.previous, inputs.previous) {
            (None, None) => true,
            (Some(mine), Some(now)) => std::ptr::eq(mine.as_ptr(), Arc::as_ptr(now)),
            _ => false,
        };
        let same_runtime = Arc::ptr_eq(&self.runtime, inputs.runtime) || *self.runtime == **inputs.runtime;
        if !(same_pod && same_previous && same_runtime && rare_matches(self.rare.as_deref(), inputs)) {
            return None;
        }
        if !Arc::ptr_eq(&self.runtime, inputs.runtime) {
            // An equal read: hold the pod cache's current allocation.
            self.runtime = inputs.runtime.clone();
        }
        Some(self.published.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::pod_status::SandboxState;
    use crate::kuberuntime::test_support::sandbox;

    struct Fixture {
        pod: Arc<Pod>,
        runtime: Arc<RuntimePodStatus>,
        previous: Arc<PodStatus>,
        waiting: Waiting,
        extras: StatusExtras,
    }

    fn fixture() -> Fixture {
        let mut runtime = RuntimePodStatus::empty("u1".into(), "web", "default");
        runtime.sandboxes.push(sandbox("sb1", SandboxState::Ready, 0, 10));
        Fixture {
            pod: Arc::new(Pod::default()),
            runtime: Arc::new(runtime),
            previous: Arc::new(PodStatus {
                phase: Some("Running".into()),
                ..PodStatus::default()
            }),
            waiting: Waiting::new(),
            extras: StatusExtras::default(),
        }
    }

    fn inputs(f: &Fixture) -> PublishInputs<'_> {
        PublishInputs {
            pod: &f.pod,
            runtime: &f.runtime,
            previous: Some(&f.previous),
            waiting: &f.waiting,
            extras: &f.extras,
        }
    }

    fn decided() -> Published {
        Published {
            terminal: false,
            start_time: None,
        }
    }

    #[test]
    fn the_same_inputs_reuse_the_last_publication() {
        let f = fixture();
        let mut memo = PublishMemo::new(&inputs(&f), decided());
        assert_eq!(memo.reuse(&inputs(&f)), Some(decided()));
    }

    #[test]
    fn an_equal_runtime_read_is_the_same_input_and_replaces_the_held_one() {
        let mut f = fixture();
        let mut memo = PublishMemo::new(&inputs(&f), decided());
        let old = Arc::downgrade(&f.runtime);
        f.runtime = Arc::new((*f.runtime).clone());
        assert_eq!(memo.reuse(&inputs(&f)), Some(decided()));
        assert!(old.upgrade().is_none(), "the memo let the old read go");
        let mut changed = (*f.runtime).clone();
        changed.sandboxes[0].state = SandboxState::NotReady;
        f.runtime = Arc::new(changed);
        assert_eq!(memo.reuse(&inputs(&f)), None);
    }

    #[test]
    fn a_new_pod_or_previous_status_is_a_new_input_even_when_equal() {
        let mut f = fixture();
        let mut memo = PublishMemo::new(&inputs(&f), decided());
        f.pod = Arc::new((*f.pod).clone());
        assert_eq!(memo.reuse(&inputs(&f)), None, "another pod allocation");
        let mut memo = PublishMemo::new(&inputs(&f), decided());
        f.previous = Arc::new((*f.previous).clone());
        assert_eq!(memo.reuse(&inputs(&f)), None, "the status manager stored a status");
        let mut memo_without = PublishMemo::new(
            &PublishInputs {
                previous: None,
                ..inputs(&f)
            },
            decided(),
        );
        assert_eq!(memo_without.reuse(&inputs(&f)), None, "the first status was stored");
    }

    #[test]
    fn probe_results_waiting_reasons_and_resizes_are_inputs() {
        let f = fixture();
        let mut memo = PublishMemo::new(&inputs(&f), decided());
        let ready: HashMap<String, bool> = [("c1".to_string(), true)].into();
        let waiting: Waiting = [("app".to_string(), ("CrashLoopBackOff".into(), "back-off".into()))].into();
        let extras = [
            StatusExtras {
                readiness: ready.clone(),
                ..StatusExtras::default()
            },
            StatusExtras {
                started: ready,
                ..StatusExtras::default()
            },
            StatusExtras {
                resize_in_progress: true,
                ..StatusExtras::default()
            },
            StatusExtras {
                resize_error: Some("no".into()),
                ..StatusExtras::default()
            },
            StatusExtras {
                resize_pending: Some(("Deferred".into(), "later".into())),
                ..StatusExtras::default()
            },
        ];
        let mut variants: Vec<PublishInputs<'_>> = extras
            .iter()
            .map(|extras| PublishInputs { extras, ..inputs(&f) })
            .collect();
        variants.push(PublishInputs {
            waiting: &waiting,
            ..inputs(&f)
        });
        for v in &variants {
            assert_eq!(memo.reuse(v), None, "{v:?}");
            let mut with = PublishMemo::new(v, decided());
            assert_eq!(with.reuse(v), Some(decided()), "the same rare inputs again: {v:?}");
            assert_eq!(with.reuse(&inputs(&f)), None, "back to none: {v:?}");
        }
    }

    #[test]
    fn published_keeps_what_the_step_decides_on() {
        let status = PodStatus {
            phase: Some("Succeeded".into()),
            start_time: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
            ..PodStatus::default()
        };
        let p = Published::of(&status);
        assert!(p.terminal);
        assert_eq!(p.start_time, status.start_time);
        assert!(!Published::of(&PodStatus::default()).terminal);
    }
}
