//! Pure: the scheduler predicates the kubelet re-checks at admission
//! (upstream `component-helpers/scheduling/corev1`): required node affinity
//! (`nodeSelectorTerms`, ORed; expressions ANDed), and taints the pod does
//! not tolerate (`FindMatchingUntoleratedTaint`, `ToleratesTaint`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration};

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(have), [want]) = (value.and_then(int), values) else {
                return false;
            };
            let Some(want) = int(want) else { return false };
            if op == "Gt" { have > want } else { have < want }
        }
        _ => false,
    }
}

fn term_matches(t: &NodeSelectorTerm, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
    let exprs = t.match_expressions.as_deref().unwrap_or_default();
    let fields = t.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        // An empty term matches no objects (upstream).
        return false;
    }
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields
            .iter()
            .all(|r| r.key == "metadata.name" && requirement_matches(r, Some(node_name)))
}

/// Whether the pod's `requiredDuringSchedulingIgnoredDuringExecution` node
/// affinity matches the node (no required affinity: matches).
pub fn required_affinity_matches(pod: &Pod, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
    let Some(required) = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
    else {
        return true;
    };
    required
        .node_selector_terms
        .iter()
        .any(|t| term_matches(t, node_name, labels))
}

/// Upstream `Toleration.ToleratesTaint`: an empty effect or key matches
/// any; `Exists` matches any value, `Equal` (or no operator) the same value.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default(),
        "Exists" => true,
        _ => false,
    }
}

/// The first `NoExecute` taint of the node the pod does not tolerate
/// (upstream `FindMatchingUntoleratedTaint` with the kubelet's filter: it is
/// only interested in `NoExecute`).
pub fn untolerated_no_execute<'a>(taints: &'a [Taint], pod: &Pod) -> Option<&'a Taint> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    taints
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn labels() -> BTreeMap<String, String> {
        [("zone", "a"), ("cores", "8")]
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect()
    }

    fn affinity(terms: &str) -> Pod {
        pod(&format!(
            "spec: {{affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: {terms}}}}}}}, containers: [{{name: c, image: i}}]}}"
        ))
    }

    #[test]
    fn required_affinity_operators_terms_and_fields() {
        let m = |terms: &str| required_affinity_matches(&affinity(terms), "n1", &labels());
        assert!(m("[{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]"));
        assert!(!m("[{matchExpressions: [{key: zone, operator: NotIn, values: [a]}]}]"));
        assert!(m(
            "[{matchExpressions: [{key: gpu, operator: DoesNotExist}, {key: zone, operator: Exists}]}]"
        ));
        assert!(m("[{matchExpressions: [{key: cores, operator: Gt, values: ['4']}]}]"));
        assert!(!m("[{matchExpressions: [{key: cores, operator: Lt, values: ['4']}]}]"));
        assert!(!m("[{matchExpressions: [{key: cores, operator: Gt, values: [x]}]}]"));
        // ORed terms; an empty term matches nothing.
        assert!(m(
            "[{matchExpressions: [{key: zone, operator: In, values: [z]}]}, {matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]"
        ));
        assert!(!m("[{}]"));
        assert!(!m("[]"));
        assert!(required_affinity_matches(
            &pod("spec: {containers: [{name: c, image: i}]}"),
            "n1",
            &labels()
        ));
    }

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
            time_added: None,
        }
    }

    #[test]
    fn tolerations_match_taints_as_upstream() {
        let t = |json: serde_json::Value| -> Toleration { serde_json::from_value(json).unwrap() };
        let gpu = taint("gpu", Some("yes"), "NoExecute");
        assert!(
            tolerates(&t(serde_json::json!({"key": "gpu", "value": "yes"})), &gpu),
            "no operator: Equal"
        );
        assert!(tolerates(
            &t(serde_json::json!({"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoExecute"})),
            &gpu
        ));
        assert!(!tolerates(&t(serde_json::json!({"key": "gpu", "value": "no"})), &gpu));
        assert!(tolerates(
            &t(serde_json::json!({"key": "gpu", "operator": "Exists"})),
            &gpu
        ));
        assert!(!tolerates(
            &t(serde_json::json!({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"})),
            &gpu
        ));
        assert!(
            tolerates(&t(serde_json::json!({"operator": "Exists"})), &gpu),
            "empty key + Exists: everything"
        );
        assert!(!tolerates(
            &t(serde_json::json!({"key": "other", "operator": "Exists"})),
            &gpu
        ));
        assert!(
            !tolerates(
                &t(serde_json::json!({"key": "gpu", "operator": "Gt", "value": "1"})),
                &gpu
            ),
            "unknown operators match nothing"
        );
        let bare = taint("maintenance", None, "NoExecute");
        assert!(
            tolerates(&t(serde_json::json!({"key": "maintenance"})), &bare),
            "no value on either side"
        );
    }

    #[test]
    fn only_untolerated_no_execute_taints_count() {
        let taints = [
            taint("dedicated", Some("db"), "NoSchedule"),
            taint("node.kubernetes.io/unreachable", None, "NoExecute"),
            taint("maintenance", None, "NoExecute"),
        ];
        let bare = pod("spec: {containers: [{name: c, image: i}]}");
        assert_eq!(
            untolerated_no_execute(&taints, &bare).map(|t| t.key.as_str()),
            Some("node.kubernetes.io/unreachable")
        );
        let some = pod(
            "spec: {tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}], containers: [{name: c, image: i}]}",
        );
        assert_eq!(
            untolerated_no_execute(&taints, &some).map(|t| t.key.as_str()),
            Some("maintenance")
        );
        let all = pod("spec: {tolerations: [{operator: Exists}], containers: [{name: c, image: i}]}");
        assert_eq!(untolerated_no_execute(&taints, &all), None);
        assert_eq!(
            untolerated_no_execute(&taints[..1], &bare),
            None,
            "NoSchedule is the scheduler's business"
        );
    }
}
