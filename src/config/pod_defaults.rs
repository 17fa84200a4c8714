//! The defaults the API server would apply to a pod (upstream
//! `pkg/apis/core/v1/defaults.go`). Static pods never pass through the API
//! server, and upstream's decoder applies these while decoding a manifest, so
//! the kubelet applies them itself before computing the UID hash.
//!
//! Only unset fields are filled; a value the manifest sets is never changed.

use k8s_openapi::api::core::v1::{Container, HTTPGetAction, Pod, PodSpec, Probe, Volume};

/// Upstream `SetDefaults_Pod` and friends, for the fields a static pod uses.
pub fn apply_api_defaults(pod: &mut Pod) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    apply_spec_defaults(spec);
}

fn apply_spec_defaults(spec: &mut PodSpec) {
    default(&mut spec.restart_policy, "Always");
    default(&mut spec.dns_policy, "ClusterFirst");
    default(&mut spec.scheduler_name, "default-scheduler");
    spec.termination_grace_period_seconds.get_or_insert(30);
    spec.security_context.get_or_insert_with(Default::default);
    spec.enable_service_links.get_or_insert(true);
    let host_network = spec.host_network == Some(true);
    let init = spec.init_containers.iter_mut().flatten();
    for container in init.chain(spec.containers.iter_mut()) {
        apply_container_defaults(container, host_network);
    }
    for volume in spec.volumes.iter_mut().flatten() {
        apply_volume_defaults(volume);
    }
}

/// Upstream `SetDefaults_Container` plus the defaults of its nested types.
pub fn apply_container_defaults(container: &mut Container, host_network: bool) {
    default(&mut container.termination_message_path, "/dev/termination-log");
    default(&mut container.termination_message_policy, "File");
    if container.image_pull_policy.as_deref().is_none_or(str::is_empty) {
        let image = container.image.as_deref().unwrap_or_default();
        let policy = if image_tag(image) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        container.image_pull_policy = Some(policy.to_owned());
    }
    for port in container.ports.iter_mut().flatten() {
        default(&mut port.protocol, "TCP");
        if host_network && port.host_port.unwrap_or(0) == 0 {
            port.host_port = Some(port.container_port);
        }
    }
    if let Some(resources) = &mut container.resources
        && let Some(limits) = &resources.limits
    {
        // Requests default to limits (this is what makes a pod Guaranteed).
        let requests = resources.requests.get_or_insert_with(Default::default);
        for (name, limit) in limits {
            requests.entry(name.clone()).or_insert_with(|| limit.clone());
        }
    }
    let probes = [
        &mut container.liveness_probe,
        &mut container.readiness_probe,
        &mut container.startup_probe,
    ];
    for probe in probes.into_iter().flatten() {
        apply_probe_defaults(probe);
    }
    if let Some(lifecycle) = &mut container.lifecycle {
        for handler in [&mut lifecycle.post_start, &mut lifecycle.pre_stop]
            .into_iter()
            .flatten()
        {
            if let Some(action) = &mut handler.http_get {
                apply_http_get_defaults(action);
            }
        }
    }
    for env in container.env.iter_mut().flatten() {
        if let Some(field_ref) = env.value_from.as_mut().and_then(|from| from.field_ref.as_mut()) {
            default(&mut field_ref.api_version, "v1");
        }
    }
}

/// The tag of an image reference as upstream `parsers.ParseImageName` sees it:
/// `latest` when there is neither tag nor digest, `None` for digest-only.
pub fn image_tag(image: &str) -> Option<&str> {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_component = name.rsplit('/').next().unwrap_or(name);
    match last_component.rsplit_once(':') {
        Some((_, tag)) => Some(tag),
        None if digest.is_some() => None,
        None => Some("latest"),
    }
}

fn apply_probe_defaults(probe: &mut Probe) {
    probe.timeout_seconds.get_or_insert(1);
    probe.period_seconds.get_or_insert(10);
    probe.success_threshold.get_or_insert(1);
    probe.failure_threshold.get_or_insert(3);
    if let Some(action) = &mut probe.http_get {
        apply_http_get_defaults(action);
    }
}

fn apply_http_get_defaults(action: &mut HTTPGetAction) {
    default(&mut action.path, "/");
    default(&mut action.scheme, "HTTP");
}

fn apply_volume_defaults(volume: &mut Volume) {
    const DEFAULT_MODE: i32 = 0o644;
    if let Some(host_path) = &mut volume.host_path {
        host_path.type_.get_or_insert_with(String::new);
    }
    if let Some(source) = &mut volume.config_map {
        source.default_mode.get_or_insert(DEFAULT_MODE);
    }
    if let Some(source) = &mut volume.secret {
        source.default_mode.get_or_insert(DEFAULT_MODE);
    }
    if let Some(source) = &mut volume.downward_api {
        source.default_mode.get_or_insert(DEFAULT_MODE);
    }
    if let Some(source) = &mut volume.projected {
        source.default_mode.get_or_insert(DEFAULT_MODE);
    }
}

/// Sets `field` to `value` when it is unset or empty.
fn default(field: &mut Option<String>, value: &str) {
    if field.as_deref().is_none_or(str::is_empty) {
        *field = Some(value.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(yaml: &str) -> Pod {
        let mut pod: Pod = serde_yaml_ng::from_str(yaml).unwrap();
        apply_api_defaults(&mut pod);
        pod
    }

    #[test]
    fn fills_pod_level_defaults() {
        let spec = defaulted("spec: {containers: []}").spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(spec.security_context, Some(Default::default()));
        assert_eq!(spec.enable_service_links, Some(true));
        assert!(defaulted("metadata: {name: a}").spec.is_some());
    }

    #[test]
    fn keeps_values_the_manifest_sets() {
        let yaml = "spec: {restartPolicy: Never, terminationGracePeriodSeconds: 5, dnsPolicy: Default, schedulerName: mine,
  containers: [{name: c, image: nginx, imagePullPolicy: Never, terminationMessagePath: /x, terminationMessagePolicy: FallbackToLogsOnError}]}";
        let spec = defaulted(yaml).spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.termination_grace_period_seconds, Some(5));
        assert_eq!(spec.dns_policy.as_deref(), Some("Default"));
        assert_eq!(spec.scheduler_name.as_deref(), Some("mine"));
        let container = &spec.containers[0];
        assert_eq!(container.image_pull_policy.as_deref(), Some("Never"));
        assert_eq!(container.termination_message_path.as_deref(), Some("/x"));
        assert_eq!(
            container.termination_message_policy.as_deref(),
            Some("FallbackToLogsOnError")
        );
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1.27", "IfNotPresent"),
            ("nginx:1.27@sha256:abc", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
        ];
        for (image, policy) in cases {
            let pod = defaulted(&format!("spec: {{containers: [{{name: c, image: '{image}'}}]}}"));
            assert_eq!(
                pod.spec.unwrap().containers[0].image_pull_policy.as_deref(),
                Some(policy),
                "{image}"
            );
        }
    }

    #[test]
    fn fills_container_defaults_for_init_and_regular_containers() {
        let yaml = "spec:
  hostNetwork: true
  initContainers: [{name: i, image: busybox}]
  containers:
  - name: c
    image: nginx
    ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP, hostPort: 5353}]
    resources: {limits: {cpu: '1'}, requests: {memory: 1Gi}}
    livenessProbe: {httpGet: {port: 80}}
    lifecycle: {preStop: {httpGet: {port: 80, path: /stop}}}
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
  volumes: [{name: h, hostPath: {path: /etc}}, {name: s, secret: {secretName: s}}]";
        let spec = defaulted(yaml).spec.unwrap();
        let init = &spec.init_containers.as_ref().unwrap()[0];
        assert_eq!(init.termination_message_path.as_deref(), Some("/dev/termination-log"));
        assert_eq!(init.termination_message_policy.as_deref(), Some("File"));
        let c = &spec.containers[0];
        let ports = c.ports.as_ref().unwrap();
        assert_eq!(
            (ports[0].protocol.as_deref(), ports[0].host_port),
            (Some("TCP"), Some(80))
        );
        assert_eq!(
            (ports[1].protocol.as_deref(), ports[1].host_port),
            (Some("UDP"), Some(5353))
        );
        let requests = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
        assert_eq!(requests["cpu"].0, "1");
        assert_eq!(requests["memory"].0, "1Gi");
        let probe = c.liveness_probe.as_ref().unwrap();
        assert_eq!(
            (
                probe.timeout_seconds,
                probe.period_seconds,
                probe.success_threshold,
                probe.failure_threshold
            ),
            (Some(1), Some(10), Some(1), Some(3))
        );
        let http = probe.http_get.as_ref().unwrap();
        assert_eq!(
            (http.path.as_deref(), http.scheme.as_deref()),
            (Some("/"), Some("HTTP"))
        );
        let pre_stop = c
            .lifecycle
            .as_ref()
            .unwrap()
            .pre_stop
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap();
        assert_eq!(
            (pre_stop.path.as_deref(), pre_stop.scheme.as_deref()),
            (Some("/stop"), Some("HTTP"))
        );
        let field_ref = c.env.as_ref().unwrap()[0]
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap();
        assert_eq!(field_ref.api_version.as_deref(), Some("v1"));
        let volumes = spec.volumes.unwrap();
        assert_eq!(volumes[0].host_path.as_ref().unwrap().type_.as_deref(), Some(""));
        assert_eq!(volumes[1].secret.as_ref().unwrap().default_mode, Some(0o644));
    }

    #[test]
    fn no_host_ports_without_host_network() {
        let spec = defaulted("spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}")
            .spec
            .unwrap();
        assert_eq!(spec.containers[0].ports.as_ref().unwrap()[0].host_port, None);
    }
}
