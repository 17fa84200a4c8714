//! Pure: whether a container restarts — the pod's `restartPolicy`, unless the
//! container sets its own `restartPolicy` and `restartPolicyRules`
//! (KEP-5307 `ContainerRestartRules`, beta and on by default since v1.35).
//! Upstream `podutil.ContainerShouldRestart` and `IsContainerRestartable`.
//!
//! Rules are looked at in order; the first whose exit codes match decides
//! (`Restart`); when none matches, the container's `restartPolicy` decides,
//! and without one, the pod's. Rules only count on a container that sets a
//! `restartPolicy` (the API server refuses them otherwise). An init
//! container with `restartPolicy: Always` is a sidecar, not an override.

use k8s_openapi::api::core::v1::{Container, ContainerRestartRule, PodSpec};

/// The rule action that restarts the container.
pub const ACTION_RESTART: &str = "Restart";

/// The first of the container's rules matching `exit_code`.
fn matching_rule(container: &Container, exit_code: i32) -> Option<&ContainerRestartRule> {
    container.restart_policy_rules.iter().flatten().find(|rule| {
        let Some(codes) = &rule.exit_codes else { return false };
        let listed = codes.values.iter().flatten().any(|v| *v == exit_code);
        match codes.operator.as_str() {
            "In" => listed,
            "NotIn" => !listed,
            _ => false,
        }
    })
}

/// Whether a policy restarts after `exit_code` (`None`: unknown policy).
fn policy_restarts(policy: &str, exit_code: i32) -> Option<bool> {
    match policy {
        "Always" => Some(true),
        "OnFailure" => Some(exit_code != 0),
        "Never" => Some(false),
        _ => None,
    }
}

/// Whether `container`, having exited with `exit_code`, is started again
/// (upstream `ContainerShouldRestart`).
///
/// ```
/// use k8s_openapi::api::core::v1::{Container, PodSpec};
/// use actlet::container_restart::container_should_restart;
/// let spec: PodSpec = serde_json::from_value(serde_json::json!({"restartPolicy": "Never", "containers": []})).unwrap();
/// let c: Container = serde_json::from_value(serde_json::json!({
///     "name": "trainer",
///     "restartPolicy": "Never",
///     "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
/// })).unwrap();
/// assert!(container_should_restart(&c, &spec, 42)); // retriable
/// assert!(!container_should_restart(&c, &spec, 1)); // the container's Never
/// assert!(!container_should_restart(&Container::default(), &spec, 1)); // the pod's Never
/// ```
pub fn container_should_restart(container: &Container, spec: &PodSpec, exit_code: i32) -> bool {
    if let Some(policy) = container.restart_policy.as_deref() {
        if matching_rule(container, exit_code).is_some_and(|r| r.action == ACTION_RESTART) {
            return true;
        }
        if let Some(restart) = policy_restarts(policy, exit_code) {
            return restart;
        }
    }
    // The pod's policy; unknown values read as the API default, Always.
    policy_restarts(spec.restart_policy.as_deref().unwrap_or("Always"), exit_code).unwrap_or(true)
}

/// Whether `container` may ever be restarted (upstream
/// `IsContainerRestartable`): a restarting rule, or a policy other than
/// `Never` (the container's, else the pod's).
pub fn is_container_restartable(spec: &PodSpec, container: &Container) -> bool {
    if let Some(policy) = container.restart_policy.as_deref() {
        let restarting_rule = container
            .restart_policy_rules
            .iter()
            .flatten()
            .any(|r| r.action == ACTION_RESTART);
        return restarting_rule || policy != "Never";
    }
    spec.restart_policy.as_deref() != Some("Never")
}

/// Whether a container killed while running (liveness or startup failure)
/// or an init container that failed without an exit code to match is
/// started again: the container's policy if set, else the pod's, other than
/// `Never` (upstream `computePodActions` and `computeInitContainerActions`:
/// rules are not evaluated, there is no exit code yet).
pub fn restarts_after_kill(container: &Container, spec: &PodSpec) -> bool {
    match container.restart_policy.as_deref() {
        Some(policy) => policy != "Never",
        None => spec.restart_policy.as_deref() != Some("Never"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(policy: &str) -> PodSpec {
        PodSpec {
            restart_policy: Some(policy.into()),
            ..Default::default()
        }
    }

    fn container(policy: Option<&str>, rules: serde_json::Value) -> Container {
        let mut c: Container =
            serde_json::from_value(serde_json::json!({"name": "c", "restartPolicyRules": rules})).expect("container");
        c.restart_policy = policy.map(str::to_owned);
        c
    }

    #[test]
    fn the_pod_policy_decides_without_an_override() {
        let c = container(None, serde_json::Value::Null);
        for (policy, code, restart) in [
            ("Always", 0, true),
            ("Always", 1, true),
            ("OnFailure", 0, false),
            ("OnFailure", 3, true),
            ("Never", 3, false),
            ("Bogus", 3, true),
        ] {
            assert_eq!(
                container_should_restart(&c, &spec(policy), code),
                restart,
                "{policy} {code}"
            );
        }
    }

    #[test]
    fn the_container_policy_overrides_the_pod() {
        let never = container(Some("Never"), serde_json::Value::Null);
        assert!(!container_should_restart(&never, &spec("Always"), 1));
        let on_failure = container(Some("OnFailure"), serde_json::Value::Null);
        assert!(container_should_restart(&on_failure, &spec("Never"), 2));
        assert!(!container_should_restart(&on_failure, &spec("Always"), 0));
        let always = container(Some("Always"), serde_json::Value::Null);
        assert!(container_should_restart(&always, &spec("Never"), 0));
    }

    #[test]
    fn the_first_matching_rule_wins_and_not_in_inverts() {
        let rules = serde_json::json!([
            {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0, 1]}},
            {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}
        ]);
        let c = container(Some("Never"), rules);
        assert!(container_should_restart(&c, &spec("Never"), 7), "NotIn [0,1]");
        assert!(container_should_restart(&c, &spec("Never"), 1), "second rule");
        assert!(!container_should_restart(&c, &spec("Never"), 0), "no rule: Never");
    }

    #[test]
    fn rules_need_a_container_policy_and_unknown_operators_never_match() {
        let rules = serde_json::json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": [5]}}]);
        let no_policy = container(None, rules);
        assert!(!container_should_restart(&no_policy, &spec("Never"), 5));
        let odd = container(
            Some("Never"),
            serde_json::json!([{"action": "Restart", "exitCodes": {"operator": "Near", "values": [5]}}]),
        );
        assert!(!container_should_restart(&odd, &spec("Always"), 5));
    }

    #[test]
    fn restartable_and_after_kill() {
        let rules = serde_json::json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": [5]}}]);
        assert!(is_container_restartable(
            &spec("Never"),
            &container(Some("Never"), rules)
        ));
        let never = container(Some("Never"), serde_json::Value::Null);
        assert!(!is_container_restartable(&spec("Always"), &never));
        assert!(!restarts_after_kill(&never, &spec("Always")));
        let plain = container(None, serde_json::Value::Null);
        assert!(!is_container_restartable(&spec("Never"), &plain));
        assert!(is_container_restartable(&spec("OnFailure"), &plain));
        assert!(restarts_after_kill(
            &container(Some("OnFailure"), serde_json::Value::Null),
            &spec("Never")
        ));
    }
}
