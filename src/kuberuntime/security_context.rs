//! Security settings for sandboxes and containers (upstream
//! `securitycontext.DetermineEffectiveSecurityContext`,
//! `determineEffectiveSecurityContext`, `runtimeutil.NamespacesForPod`,
//! `getSeccompProfile`, `verifyRunAsNonRoot`).
//!
//! Runtime facts this module encodes (see `real-runtime.md`):
//! - PID namespace defaults to POD on containerd; we always send CONTAINER
//!   unless `hostPID` (NODE) or `shareProcessNamespace` (POD).
//! - A privileged container needs a privileged sandbox.
//! - Only the Unconfined AppArmor profile is sent (no AppArmor on these hosts).

use std::path::Path;

use k8s_openapi::api::core::v1::{Container, Pod, SeccompProfile, SecurityContext};

use crate::cri::v1::security_profile::ProfileType;
use crate::cri::v1::{
    Capability, Int64Value, LinuxContainerSecurityContext, LinuxSandboxSecurityContext, NamespaceMode, NamespaceOption,
    SeLinuxOption, SecurityProfile, SupplementalGroupsPolicy,
};

/// The user an image runs as (from `ImageStatus`): a numeric uid, or a name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageUser {
    /// Numeric uid, when the image's user is numeric.
    pub uid: Option<i64>,
    /// User name, when it is not.
    pub username: String,
}

/// Upstream's default masked paths (moby's list).
pub const DEFAULT_MASKED_PATHS: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
/// Upstream's default read-only paths.
pub const DEFAULT_READONLY_PATHS: &[&str] = &["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

fn flag(v: Option<bool>) -> bool {
    v.unwrap_or(false)
}

/// Network, PID and IPC namespace modes of the pod.
pub fn namespace_options(pod: &Pod) -> NamespaceOption {
    let spec = pod.spec.as_ref();
    let network = if flag(spec.and_then(|s| s.host_network)) {
        NamespaceMode::Node
    } else {
        NamespaceMode::Pod
    };
    let ipc = if flag(spec.and_then(|s| s.host_ipc)) {
        NamespaceMode::Node
    } else {
        NamespaceMode::Pod
    };
    let pid = if flag(spec.and_then(|s| s.host_pid)) {
        NamespaceMode::Node
    } else if flag(spec.and_then(|s| s.share_process_namespace)) {
        NamespaceMode::Pod
    } else {
        NamespaceMode::Container
    };
    NamespaceOption {
        network: network as i32,
        pid: pid as i32,
        ipc: ipc as i32,
        target_id: String::new(),
    }
}

/// True when any init or regular container asks for `privileged: true`.
pub fn has_privileged_container(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return false };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| flag(c.security_context.as_ref().and_then(|s| s.privileged)))
}

/// The container's security context with the pod-level defaults
/// (`runAsUser`, `runAsGroup`, `runAsNonRoot`, `seLinuxOptions`) filled in.
pub fn effective_security_context(pod: &Pod, container: &Container) -> SecurityContext {
    let mut sc = container.security_context.clone().unwrap_or_default();
    if let Some(psc) = pod.spec.as_ref().and_then(|s| s.security_context.as_ref()) {
        sc.run_as_user = sc.run_as_user.or(psc.run_as_user);
        sc.run_as_group = sc.run_as_group.or(psc.run_as_group);
        sc.run_as_non_root = sc.run_as_non_root.or(psc.run_as_non_root);
        if sc.se_linux_options.is_none() {
            sc.se_linux_options = psc.se_linux_options.clone();
        }
    }
    sc
}

fn profile(kind: ProfileType) -> SecurityProfile {
    SecurityProfile {
        profile_type: kind as i32,
        localhost_ref: String::new(),
    }
}

/// The container's seccomp profile: container field, else pod field, else
/// RuntimeDefault with `seccomp_default`, else Unconfined.
pub fn seccomp_profile(
    pod: &Pod,
    container: &Container,
    profile_root: &Path,
    seccomp_default: bool,
) -> Result<SecurityProfile, String> {
    let from_container = container
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    let from_pod = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.seccomp_profile.as_ref());
    match from_container.or(from_pod) {
        Some(p) => field_seccomp_profile(p, profile_root),
        None if seccomp_default => Ok(profile(ProfileType::RuntimeDefault)),
        None => Ok(profile(ProfileType::Unconfined)),
    }
}

/// Beta annotation prefix of a container's AppArmor profile (upstream
/// `DeprecatedAppArmorBetaContainerAnnotationKeyPrefix`).
pub const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The container's AppArmor profile (upstream `getAppArmorProfile`): the
/// container's `appArmorProfile`, else the beta annotation, else the pod's;
/// `None` (the runtime's default) when none is set.
///
/// # Errors
/// A `Localhost` profile without a name, or an unknown type or annotation value.
pub fn apparmor_profile(pod: &Pod, container: &Container) -> Result<Option<SecurityProfile>, String> {
    let field = container
        .security_context
        .as_ref()
        .and_then(|s| s.app_armor_profile.as_ref())
        .map(|p| (p.type_.clone(), p.localhost_profile.clone()));
    let annotation = || {
        let key = format!("{APPARMOR_ANNOTATION_PREFIX}{}", container.name);
        let value = pod.metadata.annotations.as_ref()?.get(&key)?;
        Some(match value.as_str() {
            "runtime/default" => ("RuntimeDefault".to_string(), None),
            "unconfined" => ("Unconfined".to_string(), None),
            v => match v.strip_prefix("localhost/") {
                Some(name) => ("Localhost".to_string(), Some(name.to_string())),
                None => (format!("annotation {v}"), None),
            },
        })
    };
    let from_pod = || {
        pod.spec
            .as_ref()
            .and_then(|s| s.security_context.as_ref())
            .and_then(|s| s.app_armor_profile.as_ref())
            .map(|p| (p.type_.clone(), p.localhost_profile.clone()))
    };
    let Some((kind, localhost)) = field.or_else(annotation).or_else(from_pod) else {
        return Ok(None);
    };
    let p = match kind.as_str() {
        "RuntimeDefault" => profile(ProfileType::RuntimeDefault),
        "Unconfined" => profile(ProfileType::Unconfined),
        "Localhost" => SecurityProfile {
            profile_type: ProfileType::Localhost as i32,
            localhost_ref: localhost.ok_or("missing localhost apparmor profile name")?,
        },
        other => return Err(format!("unknown apparmor profile type: {other:?}")),
    };
    Ok(Some(p))
}

fn field_seccomp_profile(p: &SeccompProfile, root: &Path) -> Result<SecurityProfile, String> {
    match p.type_.as_str() {
        "RuntimeDefault" => Ok(profile(ProfileType::RuntimeDefault)),
        "Localhost" => match p.localhost_profile.as_deref().filter(|s| !s.is_empty()) {
            Some(name) => Ok(SecurityProfile {
                profile_type: ProfileType::Localhost as i32,
                localhost_ref: root.join(name).to_string_lossy().into_owned(),
            }),
            None => Err("localhostProfile must be set if seccompProfile type is Localhost.".into()),
        },
        _ => Ok(profile(ProfileType::Unconfined)),
    }
}

fn selinux(o: Option<&k8s_openapi::api::core::v1::SELinuxOptions>) -> Option<SeLinuxOption> {
    o.map(|o| SeLinuxOption {
        user: o.user.clone().unwrap_or_default(),
        role: o.role.clone().unwrap_or_default(),
        r#type: o.type_.clone().unwrap_or_default(),
        level: o.level.clone().unwrap_or_default(),
    })
}

/// The pod's `supplementalGroupsPolicy` as the CRI spells it (unset: Merge).
fn supplemental_groups_policy(pod: &Pod) -> i32 {
    let psc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    match psc.and_then(|s| s.supplemental_groups_policy.as_deref()) {
        Some("Strict") => SupplementalGroupsPolicy::Strict as i32,
        _ => SupplementalGroupsPolicy::Merge as i32,
    }
}

/// `fsGroup` then `supplementalGroups` of the pod.
fn supplemental_groups(pod: &Pod) -> Vec<i64> {
    let psc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let fs_group = psc.and_then(|s| s.fs_group);
    fs_group
        .into_iter()
        .chain(psc.and_then(|s| s.supplemental_groups.clone()).unwrap_or_default())
        .collect()
}

/// The sandbox's security context: namespaces, privileged when any container
/// is, pod `runAsUser`/`runAsGroup`, groups, SELinux, RuntimeDefault seccomp
/// (as upstream forces for the pause container), Unconfined AppArmor.
pub fn sandbox_security_context(pod: &Pod) -> LinuxSandboxSecurityContext {
    let psc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    LinuxSandboxSecurityContext {
        namespace_options: Some(namespace_options(pod)),
        selinux_options: selinux(psc.and_then(|s| s.se_linux_options.as_ref())),
        run_as_user: psc.and_then(|s| s.run_as_user).map(|value| Int64Value { value }),
        run_as_group: psc.and_then(|s| s.run_as_group).map(|value| Int64Value { value }),
        readonly_rootfs: false,
        supplemental_groups: supplemental_groups(pod),
        supplemental_groups_policy: supplemental_groups_policy(pod),
        privileged: has_privileged_container(pod),
        seccomp: Some(profile(ProfileType::RuntimeDefault)),
        apparmor: Some(profile(ProfileType::Unconfined)),
    }
}

/// Upstream `verifyRunAsNonRoot`: with `runAsNonRoot: true`, the container
/// must not run as uid 0 (explicitly or by its image), and an image with a
/// non-numeric user cannot be verified.
pub fn verify_run_as_non_root(pod: &Pod, container: &Container, image: &ImageUser) -> Result<(), String> {
    let sc = effective_security_context(pod, container);
    if !flag(sc.run_as_non_root) {
        return Ok(());
    }
    let pod_name = format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default()
    );
    let name = &container.name;
    match (sc.run_as_user, image.uid) {
        (Some(0), _) => Err(format!(
            "container's runAsUser breaks non-root policy (pod: {pod_name:?}, container: {name})"
        )),
        (Some(_), _) => Ok(()),
        (None, Some(0)) => Err(format!(
            "container has runAsNonRoot and image will run as root (pod: {pod_name:?}, container: {name})"
        )),
        (None, None) if !image.username.is_empty() => Err(format!(
            "container has runAsNonRoot and image has non-numeric user ({}), cannot verify user is non-root (pod: {pod_name:?}, container: {name})",
            image.username
        )),
        _ => Ok(()),
    }
}

/// The container's Linux security context (upstream
/// `determineEffectiveSecurityContext`).
pub fn container_security_context(
    pod: &Pod,
    container: &Container,
    image: &ImageUser,
    seccomp: SecurityProfile,
) -> LinuxContainerSecurityContext {
    let sc = effective_security_context(pod, container);
    let unmasked = sc.proc_mount.as_deref() == Some("Unmasked");
    let paths = |list: &[&str]| {
        if unmasked {
            vec![]
        } else {
            list.iter().map(|s| s.to_string()).collect()
        }
    };
    let mut out = LinuxContainerSecurityContext {
        capabilities: sc.capabilities.as_ref().map(|c| Capability {
            add_capabilities: c.add.clone().unwrap_or_default(),
            drop_capabilities: c.drop.clone().unwrap_or_default(),
            add_ambient_capabilities: vec![],
        }),
        privileged: flag(sc.privileged),
        namespace_options: Some(namespace_options(pod)),
        selinux_options: selinux(sc.se_linux_options.as_ref()),
        run_as_user: sc.run_as_user.map(|value| Int64Value { value }),
        run_as_group: sc.run_as_group.map(|value| Int64Value { value }),
        readonly_rootfs: flag(sc.read_only_root_filesystem),
        supplemental_groups: supplemental_groups(pod),
        supplemental_groups_policy: supplemental_groups_policy(pod),
        no_new_privs: sc.allow_privilege_escalation == Some(false),
        masked_paths: paths(DEFAULT_MASKED_PATHS),
        readonly_paths: paths(DEFAULT_READONLY_PATHS),
        seccomp: Some(seccomp),
        // Set by the caller from `apparmor_profile` (which can fail).
        apparmor: None,
        ..Default::default()
    };
    if out.run_as_user.is_none() {
        out.run_as_user = image.uid.map(|value| Int64Value { value });
        out.run_as_username = image.username.clone();
    }
    out
}

#[cfg(test)]
#[path = "security_context_tests.rs"]
mod tests;
