//! Pure: the Node's four kubelet-owned conditions (upstream `nodestatus`
//! setters `MemoryPressureCondition`, `DiskPressureCondition`,
//! `PIDPressureCondition`, `ReadyCondition`).
//!
//! Every update stamps `lastHeartbeatTime`; `lastTransitionTime` moves only
//! when a condition's status changes. The events upstream records on those
//! transitions are returned for the caller to record.

use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::messages::node::NodeConditionChanged;
use crate::messages::runtime_health::RuntimeHealthChanged;

/// `Ready`.
pub const READY: &str = "Ready";
/// `MemoryPressure`.
pub const MEMORY_PRESSURE: &str = "MemoryPressure";
/// `DiskPressure`.
pub const DISK_PRESSURE: &str = "DiskPressure";
/// `PIDPressure`.
pub const PID_PRESSURE: &str = "PIDPressure";
/// Ready=True's reason.
pub const KUBELET_READY: &str = "KubeletReady";
/// Ready=False's reason.
pub const KUBELET_NOT_READY: &str = "KubeletNotReady";
/// Ready=True's message.
pub const READY_MESSAGE: &str = "kubelet is posting ready status";

/// What the node's health checks say: the causes of NotReady, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Errors in upstream's order: runtime, network, PLEG, missing capacity.
    pub errors: Vec<String>,
    /// The pressure conditions the eviction manager reports True
    /// (`MemoryPressure`, `DiskPressure`, `PIDPressure`).
    pub pressure: Vec<&'static str>,
}

impl Health {
    /// The runtime verdict and the PLEG check, as upstream's
    /// `runtimeErrors()` + `networkErrors()` list them.
    pub fn from_checks(runtime: &RuntimeHealthChanged, pleg: &Result<(), String>) -> Self {
        let mut errors = vec![];
        if !runtime.runtime_ready || !runtime.network_ready {
            let msg = if runtime.message.is_empty() {
                "container runtime not ready".to_string()
            } else {
                runtime.message.clone()
            };
            errors.push(msg);
        }
        if let Err(e) = pleg {
            errors.push(e.clone());
        }
        Self {
            errors,
            pressure: vec![],
        }
    }

    /// With one more cause of NotReady (after the runtime's and the PLEG's,
    /// as upstream's `ReadyCondition` lists the shutdown status).
    ///
    /// ```
    /// use actlet::cluster::node::conditions::Health;
    /// let h = Health::default().with_error(Err("node is shutting down".into()));
    /// assert_eq!(h.cause().as_deref(), Some("node is shutting down"));
    /// ```
    pub fn with_error(mut self, check: Result<(), String>) -> Self {
        if let Err(e) = check {
            self.errors.push(e);
        }
        self
    }

    /// With the eviction manager's pressure conditions.
    ///
    /// ```
    /// use actlet::cluster::node::conditions::Health;
    /// use actlet::eviction::Pressure;
    /// let h = Health::default().with_pressure(&[Pressure::Disk].into());
    /// assert_eq!(h.pressure, vec!["DiskPressure"]);
    /// ```
    pub fn with_pressure(mut self, pressures: &std::collections::BTreeSet<crate::eviction::Pressure>) -> Self {
        self.pressure = pressures.iter().map(|p| p.condition()).collect();
        self
    }

    /// Upstream's `errors.NewAggregate(..).Error()`: messages deduplicated;
    /// one is itself, several are `[a, b]`. `None` when healthy.
    pub fn cause(&self) -> Option<String> {
        let mut seen: Vec<&str> = vec![];
        for e in &self.errors {
            if !seen.contains(&e.as_str()) {
                seen.push(e);
            }
        }
        match seen.len() {
            0 => None,
            1 => Some(seen[0].to_string()),
            _ => Some(format!("[{}]", seen.join(", "))),
        }
    }
}

/// `now` at the precision `metav1.Time` keeps (whole seconds).
pub fn api_now(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

struct Pressure {
    type_: &'static str,
    false_reason: &'static str,
    false_message: &'static str,
    false_event: &'static str,
    true_reason: &'static str,
    true_message: &'static str,
    true_event: &'static str,
}

const PRESSURES: [Pressure; 3] = [
    Pressure {
        type_: MEMORY_PRESSURE,
        false_reason: "KubeletHasSufficientMemory",
        false_message: "kubelet has sufficient memory available",
        false_event: "NodeHasSufficientMemory",
        true_reason: "KubeletHasInsufficientMemory",
        true_message: "kubelet has insufficient memory available",
        true_event: "NodeHasInsufficientMemory",
    },
    Pressure {
        type_: DISK_PRESSURE,
        false_reason: "KubeletHasNoDiskPressure",
        false_message: "kubelet has no disk pressure",
        false_event: "NodeHasNoDiskPressure",
        true_reason: "KubeletHasDiskPressure",
        true_message: "kubelet has disk pressure",
        true_event: "NodeHasDiskPressure",
    },
    Pressure {
        type_: PID_PRESSURE,
        false_reason: "KubeletHasSufficientPID",
        false_message: "kubelet has sufficient PID available",
        false_event: "NodeHasSufficientPID",
        true_reason: "KubeletHasInsufficientPID",
        true_message: "kubelet has insufficient PID available",
        true_event: "NodeHasInsufficientPID",
    },
];

fn index_or_push(conditions: &mut Vec<NodeCondition>, type_: &str) -> (usize, bool) {
    match conditions.iter().position(|c| c.type_ == type_) {
        Some(i) => (i, false),
        None => {
            conditions.push(NodeCondition {
                type_: type_.to_string(),
                status: "Unknown".into(),
                ..NodeCondition::default()
            });
            (conditions.len() - 1, true)
        }
    }
}

/// Sets the four conditions on `conditions` (a Node's current list, kept in
/// order; missing ones are appended in upstream's order) from `health` at
/// `now`. Returns the event reasons upstream records (`NodeHasSufficientMemory`,
/// …, `NodeReady`, `NodeNotReady`), in order.
///
/// A pressure condition is True while `health.pressure` names it (the
/// eviction manager's verdict, already held for the transition period).
pub fn update_conditions(conditions: &mut Vec<NodeCondition>, health: &Health, now: Timestamp) -> Vec<&'static str> {
    let now = Time(api_now(now));
    let mut events = vec![];
    for p in &PRESSURES {
        let (i, _) = index_or_push(conditions, p.type_);
        let c = &mut conditions[i];
        c.last_heartbeat_time = Some(now.clone());
        let under = health.pressure.contains(&p.type_);
        let (status, reason, message, event) = if under {
            ("True", p.true_reason, p.true_message, p.true_event)
        } else {
            ("False", p.false_reason, p.false_message, p.false_event)
        };
        if c.status != status {
            c.status = status.into();
            c.reason = Some(reason.into());
            c.message = Some(message.into());
            c.last_transition_time = Some(now.clone());
            events.push(event);
        }
    }
    let (status, reason, message) = match health.cause() {
        None => ("True", KUBELET_READY, READY_MESSAGE.to_string()),
        Some(cause) => ("False", KUBELET_NOT_READY, cause),
    };
    let (i, added) = index_or_push(conditions, READY);
    let c = &mut conditions[i];
    let transition = added || c.status != status;
    if transition {
        c.last_transition_time = Some(now.clone());
    }
    if transition && !added {
        events.push(if status == "True" { "NodeReady" } else { "NodeNotReady" });
    }
    c.status = status.into();
    c.reason = Some(reason.into());
    c.message = Some(message);
    c.last_heartbeat_time = Some(now);
    events
}

/// The conditions whose status, reason or message differ between `before`
/// and `after` (new ones included), as observers are told of them.
pub fn changed_conditions(before: &[NodeCondition], after: &[NodeCondition]) -> Vec<NodeConditionChanged> {
    let key = |c: &NodeCondition| (c.status.clone(), c.reason.clone(), c.message.clone());
    after
        .iter()
        .filter(|a| before.iter().find(|b| b.type_ == a.type_).map(key) != Some(key(a)))
        .map(|a| NodeConditionChanged {
            type_: a.type_.clone(),
            status: a.status.clone(),
            reason: a.reason.clone().unwrap_or_default(),
            message: a.message.clone().unwrap_or_default(),
        })
        .collect()
}

/// Upstream `nodeConditionsHaveChanged`: any difference but heartbeats.
pub fn conditions_changed(a: &[NodeCondition], b: &[NodeCondition]) -> bool {
    let strip = |l: &[NodeCondition]| {
        let mut v: Vec<NodeCondition> = l
            .iter()
            .map(|c| NodeCondition {
                last_heartbeat_time: None,
                ..c.clone()
            })
            .collect();
        v.sort_by(|x, y| x.type_.cmp(&y.type_));
        v
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap_or_default()
    }

    fn rt(ready: bool, network: bool, msg: &str) -> RuntimeHealthChanged {
        RuntimeHealthChanged {
            features: None,
            runtime_ready: ready,
            network_ready: network,
            message: msg.into(),
        }
    }

    fn ready(conds: &[NodeCondition]) -> &NodeCondition {
        conds
            .iter()
            .find(|c| c.type_ == READY)
            .unwrap_or_else(|| panic!("no Ready in {conds:?}"))
    }

    #[test]
    fn first_update_adds_the_four_in_upstream_order_with_pressure_events() {
        let mut c = vec![];
        let ev = update_conditions(&mut c, &Health::default(), t(0));
        let types: Vec<&str> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE, READY]);
        assert_eq!(
            ev,
            [
                "NodeHasSufficientMemory",
                "NodeHasNoDiskPressure",
                "NodeHasSufficientPID"
            ]
        );
        assert_eq!(c[0].reason.as_deref(), Some("KubeletHasSufficientMemory"));
        assert_eq!(c[1].message.as_deref(), Some("kubelet has no disk pressure"));
        assert_eq!(c[2].reason.as_deref(), Some("KubeletHasSufficientPID"));
        let r = ready(&c);
        assert_eq!((r.status.as_str(), r.reason.as_deref()), ("True", Some(KUBELET_READY)));
        assert_eq!(r.message.as_deref(), Some(READY_MESSAGE));
        assert_eq!(r.last_transition_time, Some(Time(t(0))));
    }

    #[test]
    fn transition_time_is_kept_while_status_holds_and_heartbeat_moves() {
        let mut c = vec![];
        update_conditions(&mut c, &Health::default(), t(0));
        let ev = update_conditions(&mut c, &Health::default(), t(10));
        assert!(ev.is_empty());
        let r = ready(&c);
        assert_eq!(r.last_transition_time, Some(Time(t(0))));
        assert_eq!(r.last_heartbeat_time, Some(Time(t(10))));
        assert_eq!(c[0].last_transition_time, Some(Time(t(0))));
        assert!(!conditions_changed(&c, &{
            let mut d = c.clone();
            update_conditions(&mut d, &Health::default(), t(20));
            d
        }));
    }

    #[test]
    fn runtime_down_makes_not_ready_with_the_cause_then_ready_again() {
        let mut c = vec![];
        update_conditions(&mut c, &Health::default(), t(0));
        let before = c.clone();
        let down = Health::from_checks(&rt(false, false, "container runtime is down: unavailable"), &Ok(()));
        let ev = update_conditions(&mut c, &down, t(10));
        assert_eq!(ev, ["NodeNotReady"]);
        let r = ready(&c);
        assert_eq!(r.status, "False");
        assert_eq!(r.reason.as_deref(), Some(KUBELET_NOT_READY));
        assert_eq!(r.message.as_deref(), Some("container runtime is down: unavailable"));
        assert_eq!(r.last_transition_time, Some(Time(t(10))));
        assert!(conditions_changed(&before, &c));
        let changed = changed_conditions(&before, &c);
        assert_eq!(changed.len(), 1);
        assert_eq!(
            (changed[0].type_.as_str(), changed[0].status.as_str()),
            (READY, "False")
        );
        let ev = update_conditions(&mut c, &Health::default(), t(20));
        assert_eq!(ev, ["NodeReady"]);
        assert_eq!(ready(&c).last_transition_time, Some(Time(t(20))));
    }

    #[test]
    fn causes_are_joined_like_an_aggregate() {
        let net = rt(
            true,
            false,
            "container runtime network not ready: NetworkReady=false reason:x message:y",
        );
        let pleg: Result<(), String> = Err("PLEG is not healthy: pleg was last seen active 4m0s ago".into());
        assert_eq!(
            Health::from_checks(&net, &pleg).cause().as_deref(),
            Some(
                "[container runtime network not ready: NetworkReady=false reason:x message:y, PLEG is not healthy: pleg was last seen active 4m0s ago]"
            )
        );
        assert_eq!(
            Health::from_checks(&rt(true, true, ""), &pleg).cause().as_deref(),
            Some("PLEG is not healthy: pleg was last seen active 4m0s ago")
        );
        assert_eq!(Health::from_checks(&rt(true, true, ""), &Ok(())).cause(), None);
        let dup = Health {
            errors: vec!["a".into(), "a".into()],
            ..Default::default()
        };
        assert_eq!(dup.cause().as_deref(), Some("a"));
    }

    #[test]
    fn pressure_turns_true_with_upstream_reasons_then_back() {
        let mut c = vec![];
        update_conditions(&mut c, &Health::default(), t(0));
        let mem = Health::default().with_pressure(&[crate::eviction::Pressure::Memory].into());
        let ev = update_conditions(&mut c, &mem, t(10));
        assert_eq!(ev, ["NodeHasInsufficientMemory"]);
        assert_eq!(c[0].status, "True");
        assert_eq!(c[0].reason.as_deref(), Some("KubeletHasInsufficientMemory"));
        assert_eq!(
            c[0].message.as_deref(),
            Some("kubelet has insufficient memory available")
        );
        assert_eq!(c[0].last_transition_time, Some(Time(t(10))));
        assert_eq!(c[1].status, "False", "disk untouched");
        assert_eq!(ready(&c).status, "True", "pressure does not make the node NotReady");
        let both =
            Health::default().with_pressure(&[crate::eviction::Pressure::Disk, crate::eviction::Pressure::Pid].into());
        let ev = update_conditions(&mut c, &both, t(20));
        assert_eq!(
            ev,
            [
                "NodeHasSufficientMemory",
                "NodeHasDiskPressure",
                "NodeHasInsufficientPID"
            ]
        );
        assert_eq!(c[1].reason.as_deref(), Some("KubeletHasDiskPressure"));
        assert_eq!(c[2].message.as_deref(), Some("kubelet has insufficient PID available"));
    }

    #[test]
    fn a_not_ready_message_change_keeps_the_transition_but_is_a_change() {
        let mut c = vec![];
        let h1 = Health {
            errors: vec!["one".into()],
            ..Default::default()
        };
        let h2 = Health {
            errors: vec!["two".into()],
            ..Default::default()
        };
        update_conditions(&mut c, &h1, t(0));
        let before = c.clone();
        assert!(update_conditions(&mut c, &h2, t(10)).is_empty());
        assert_eq!(ready(&c).last_transition_time, Some(Time(t(0))));
        assert!(conditions_changed(&before, &c));
        assert_eq!(changed_conditions(&before, &c)[0].message, "two");
    }
}
