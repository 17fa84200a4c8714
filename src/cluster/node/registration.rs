//! Pure: the Node the kubelet registers (upstream `initialNode`) and what it
//! changes on a Node that already exists (`reconcileCMADAnnotationWithExistingNode`,
//! `updateDefaultLabels`).
//!
//! Taints are only set at first registration, as upstream does: a Node that
//! exists keeps the taints an admin or controller gave it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::conditions::Health;
use super::status::{StatusInputs, apply_status};
use crate::kubelet::go_arch;

/// `volumes.kubernetes.io/controller-managed-attach-detach`.
pub const CMAD_ANNOTATION: &str = "volumes.kubernetes.io/controller-managed-attach-detach";

/// The default labels the kubelet owns on its Node (the subset actlet sets).
pub const DEFAULT_LABELS: [&str; 5] = [
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// The default labels' values for this node.
pub fn default_labels(node_name: &str) -> BTreeMap<String, String> {
    let os = std::env::consts::OS;
    let arch = go_arch();
    DEFAULT_LABELS
        .iter()
        .zip([node_name, os, arch, os, arch])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The Node to POST: `--node-labels` overlaid with the default labels, the
/// attach/detach annotation, `--register-with-taints`, and a full status.
/// The status setters' events (recorded once the Node is created) go to `events`.
pub fn initial_node(
    inputs: &StatusInputs,
    node_labels: &BTreeMap<String, String>,
    taints: &[Taint],
    health: &Health,
    now: Timestamp,
    events: &mut Vec<&'static str>,
) -> Node {
    let mut labels = node_labels.clone();
    labels.extend(default_labels(&inputs.node_name));
    let mut node = Node {
        metadata: ObjectMeta {
            name: Some(inputs.node_name.clone()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(CMAD_ANNOTATION.to_string(), "true".to_string())])),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: (!taints.is_empty()).then(|| taints.to_vec()),
            ..NodeSpec::default()
        }),
        status: None,
    };
    events.extend(apply_status(&mut node, inputs, health, now));
    node
}

/// The merge patch of `metadata` an existing Node needs so that the labels
/// and annotation the kubelet owns have the values of `initial`; `None` when
/// it has them already.
pub fn reconcile_existing(initial: &Node, existing: &Node) -> Option<Value> {
    let mut labels = serde_json::Map::new();
    let want = initial.metadata.labels.clone().unwrap_or_default();
    let have = existing.metadata.labels.clone().unwrap_or_default();
    for key in DEFAULT_LABELS {
        if let Some(v) = want.get(key)
            && have.get(key) != Some(v)
        {
            labels.insert(key.to_string(), v.clone().into());
        }
    }
    let mut annotations = serde_json::Map::new();
    let cmad = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CMAD_ANNOTATION));
    if cmad.map(String::as_str) != Some("true") {
        annotations.insert(CMAD_ANNOTATION.to_string(), "true".into());
    }
    if labels.is_empty() && annotations.is_empty() {
        return None;
    }
    let mut meta = serde_json::Map::new();
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    Some(json!({ "metadata": meta }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::node::flags::Reserved;
    use crate::kubelet::{MachineInfo, NodeFacts};

    fn inputs() -> StatusInputs {
        StatusInputs {
            node_name: "test-node".into(),
            node_ip: None,
            facts: NodeFacts {
                memory_bytes: 1 << 30,
                cpus: 1,
                ephemeral_storage_bytes: 0,
            },
            machine: MachineInfo::default(),
            max_pods: 110,
            reserved: Reserved::default(),
            runtime_version: None,
            kubelet_port: 10250,
            images: None,
            features: None,
            hard_eviction: crate::eviction::thresholds::HardReservation::upstream_default(),
        }
    }

    fn initial() -> Node {
        let labels = BTreeMap::from([
            ("pool".to_string(), "a".to_string()),
            ("kubernetes.io/hostname".to_string(), "spoofed".to_string()),
        ]);
        let taints = [Taint {
            key: "dedicated".into(),
            value: Some("gpu".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }];
        let mut events = vec![];
        let n = initial_node(
            &inputs(),
            &labels,
            &taints,
            &Health::default(),
            Timestamp::UNIX_EPOCH,
            &mut events,
        );
        assert_eq!(events.len(), 3, "NodeHas… events: {events:?}");
        n
    }

    #[test]
    fn initial_node_has_labels_annotation_taints_and_status() {
        let n = initial();
        let labels = n.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["kubernetes.io/hostname"], "test-node", "default labels win");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["beta.kubernetes.io/arch"], go_arch());
        assert_eq!(labels["pool"], "a");
        assert_eq!(n.metadata.annotations.unwrap_or_default()[CMAD_ANNOTATION], "true");
        assert_eq!(n.spec.and_then(|s| s.taints).map(|t| t.len()), Some(1));
        assert_eq!(n.status.and_then(|s| s.conditions).map(|c| c.len()), Some(4));
    }

    #[test]
    fn an_existing_node_gets_only_the_default_labels_and_annotation_fixed() {
        let init = initial();
        assert_eq!(reconcile_existing(&init, &init), None);
        let mut existing = init.clone();
        let labels = existing.metadata.labels.get_or_insert_default();
        labels.insert("kubernetes.io/arch".into(), "wrong".into());
        labels.remove("pool");
        existing.metadata.annotations = None;
        existing.spec = None;
        let p = reconcile_existing(&init, &existing).unwrap_or_default();
        assert_eq!(
            p,
            json!({"metadata": {
                "labels": {"kubernetes.io/arch": go_arch()},
                "annotations": {CMAD_ANNOTATION: "true"}
            }}),
            "--node-labels and taints are not reconciled (upstream)"
        );
    }
}
