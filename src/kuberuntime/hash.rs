//! The container spec hash (`io.kubernetes.container.hash`): how the kubelet
//! notices that a running container no longer matches its spec.
//!
//! # Choice
//! FNV-1a (32 bit) over the container's canonical JSON, written as lower-case
//! hex, like upstream's `strconv.FormatUint(HashContainer(c), 16)`. The JSON
//! is k8s-openapi's serialization (fields in a fixed order, maps sorted, unset
//! fields omitted), so the hash is stable across processes and restarts.
//!
//! Upstream v1.30 hashes the whole container, and with in-place resize it
//! compares a second hash without `resources`. actlet hashes the container
//! **without `resources` and `resizePolicy`**: a resource change alone never
//! restarts a container (it is a resize, applied with
//! `UpdateContainerResources` by a later issue). Every other field — image,
//! command, args, env, ports, probes, mounts, security context, … — is part of
//! the hash, so changing it restarts the container.

use k8s_openapi::api::core::v1::Container;

/// Fields excluded from the hash (JSON names).
const EXCLUDED_FIELDS: &[&str] = &["resources", "resizePolicy"];

/// The hash of `container`'s spec, as stored in `io.kubernetes.container.hash`.
pub fn container_hash(container: &Container) -> String {
    let json = match serde_json::to_value(container) {
        Ok(serde_json::Value::Object(mut fields)) => {
            for name in EXCLUDED_FIELDS {
                fields.remove(*name);
            }
            serde_json::Value::Object(fields).to_string()
        }
        // Serializing a Container cannot fail; fall back to the name so the
        // hash is still deterministic.
        _ => container.name.clone(),
    };
    format!("{:x}", fnv1a32(json.as_bytes()))
}

/// FNV-1a, 32 bit.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(yaml: &str) -> Container {
        serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn fnv1a32_matches_reference_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn equal_specs_hash_equal_regardless_of_yaml_key_order() {
        let a = container("{name: app, image: busybox, command: [sleep, '3600'], env: [{name: A, value: '1'}]}");
        let b = container("{env: [{value: '1', name: A}], command: [sleep, '3600'], image: busybox, name: app}");
        assert_eq!(container_hash(&a), container_hash(&b));
    }

    #[test]
    fn hash_is_stable_across_processes() {
        // A fixed value: if this changes, every running container restarts
        // after an upgrade. Change it only on purpose.
        let c = container("{name: app, image: busybox}");
        assert_eq!(
            container_hash(&c),
            format!("{:x}", fnv1a32(br#"{"image":"busybox","name":"app"}"#))
        );
    }

    #[test]
    fn image_command_env_and_probe_changes_change_the_hash() {
        let base = container_hash(&container("{name: app, image: busybox}"));
        for changed in [
            "{name: app, image: busybox:1.36}",
            "{name: app, image: busybox, command: [sh]}",
            "{name: app, image: busybox, args: [x]}",
            "{name: app, image: busybox, env: [{name: A, value: b}]}",
            "{name: app, image: busybox, ports: [{containerPort: 80}]}",
            "{name: app, image: busybox, livenessProbe: {exec: {command: [true]}}}",
            "{name: app2, image: busybox}",
        ] {
            assert_ne!(container_hash(&container(changed)), base, "{changed}");
        }
    }

    #[test]
    fn resource_and_resize_policy_changes_do_not_change_the_hash() {
        let base = container_hash(&container("{name: app, image: busybox}"));
        let resized = container(
            "{name: app, image: busybox, resources: {limits: {cpu: '2'}}, \
             resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]}",
        );
        assert_eq!(container_hash(&resized), base);
    }

    #[test]
    fn hash_is_lower_case_hex() {
        let h = container_hash(&container("{name: x}"));
        assert!(!h.is_empty() && h.len() <= 8 && h.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}
