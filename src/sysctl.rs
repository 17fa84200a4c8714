//! Pod sysctls admission (upstream `pkg/kubelet/sysctl`): a pod may set only
//! sysctls that are known to be namespaced and allowlisted — the safe set
//! (gated by the kernel version that namespaced each one) plus the node's
//! `allowedUnsafeSysctls` (`--allowed-unsafe-sysctls`, names or `prefix*`
//! patterns). Any other pod is rejected with reason `SysctlForbidden` and
//! upstream's message, e.g. `forbidden sysctl: "kernel.msgmax" not allowlisted`.
//! A pod sharing the host's network (IPC) namespace may not set a net (IPC)
//! sysctl.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

/// The reason of a rejected pod (upstream `sysctl.ForbiddenReason`).
pub const FORBIDDEN_REASON: &str = "SysctlForbidden";

/// Longest sysctl name or pattern (upstream `SysctlMaxLength`).
const MAX_LENGTH: usize = 253;

/// The kernel namespace a sysctl belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    /// The network namespace (`net.*`).
    Net,
    /// The IPC namespace (`kernel.shm*`, `kernel.msg*`, `kernel.sem`, `fs.mqueue.*`).
    Ipc,
}

impl std::fmt::Display for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Namespace::Net => "net",
            Namespace::Ipc => "ipc",
        })
    }
}

/// A bad `allowedUnsafeSysctls` entry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SysctlError {
    /// Not a sysctl name or `prefix*` pattern.
    #[error("sysctl {0:?} must have at most {MAX_LENGTH} characters and match regex {PATTERN_REGEX}")]
    Invalid(String),
    /// Not known to be namespaced: allowing it would change the host.
    #[error("the sysctls {0:?} are not known to be namespaced")]
    NotNamespaced(String),
}

const PATTERN_REGEX: &str = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$";

/// Upstream `NormalizeName`: a name whose first separator is `/` has `/` and
/// `.` swapped (`net/ipv4/ip_forward` → `net.ipv4.ip_forward`).
///
/// ```
/// use actlet::sysctl::normalize_name;
/// assert_eq!(normalize_name("net/ipv4/conf/eno2.100/rp_filter"), "net.ipv4.conf.eno2/100.rp_filter");
/// assert_eq!(normalize_name("kernel.shm_rmid_forced"), "kernel.shm_rmid_forced");
/// ```
pub fn normalize_name(name: &str) -> String {
    match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_string(),
    }
}

/// The namespace of a (normalized) sysctl name or prefix, upstream
/// `GetNamespace`.
///
/// ```
/// use actlet::sysctl::{Namespace, namespace_of};
/// assert_eq!(namespace_of("kernel.msgmax"), Some(Namespace::Ipc));
/// assert_eq!(namespace_of("net.core.somaxconn"), Some(Namespace::Net));
/// assert_eq!(namespace_of("kernel.panic"), None); // host-wide
/// ```
pub fn namespace_of(name: &str) -> Option<Namespace> {
    const IPC_PREFIXES: [&str; 3] = ["kernel.shm", "kernel.msg", "fs.mqueue."];
    if name == "kernel.sem" || IPC_PREFIXES.iter().any(|p| name.starts_with(p)) {
        Some(Namespace::Ipc)
    } else if name.starts_with("net.") {
        Some(Namespace::Net)
    } else {
        None
    }
}

fn valid_segment(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.chars().next().is_some_and(ok)
        && s.chars().last().is_some_and(ok)
        && s.chars().all(|c| ok(c) || c == '-' || c == '_')
}

/// Upstream `IsValidSysctlPattern` (names and `prefix*` patterns): segments
/// separated by `.` or `/`, the last one may end in (or be) `*`.
fn valid_pattern(s: &str) -> bool {
    let mut segments: Vec<&str> = s.split(['.', '/']).collect();
    let Some(last) = segments.pop() else {
        return false;
    };
    let last_ok = match last.strip_suffix('*') {
        Some("") => true,
        Some(head) => {
            head.chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && head
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        }
        None => valid_segment(last),
    };
    s.len() <= MAX_LENGTH && last_ok && segments.into_iter().all(valid_segment)
}

/// The safe sysctls and the kernel version (major, minor) that namespaced
/// each (upstream `safeSysctls`).
const SAFE: &[(&str, (u32, u32))] = &[
    ("kernel.shm_rmid_forced", (0, 0)),
    ("net.ipv4.ip_local_port_range", (0, 0)),
    ("net.ipv4.tcp_syncookies", (0, 0)),
    ("net.ipv4.ping_group_range", (0, 0)),
    ("net.ipv4.ip_unprivileged_port_start", (0, 0)),
    ("net.ipv4.ip_local_reserved_ports", (3, 16)),
    ("net.ipv4.tcp_keepalive_time", (4, 5)),
    ("net.ipv4.tcp_fin_timeout", (4, 6)),
    ("net.ipv4.tcp_keepalive_intvl", (4, 5)),
    ("net.ipv4.tcp_keepalive_probes", (4, 5)),
    ("net.ipv4.tcp_rmem", (4, 15)),
    ("net.ipv4.tcp_wmem", (4, 15)),
];

/// The safe sysctls for a kernel (all of them when its version is unknown,
/// as upstream).
///
/// ```
/// let old = actlet::sysctl::safe_sysctls(Some((4, 4)));
/// assert!(old.contains(&"kernel.shm_rmid_forced") && !old.contains(&"net.ipv4.tcp_rmem"));
/// assert_eq!(actlet::sysctl::safe_sysctls(None).len(), 12);
/// ```
pub fn safe_sysctls(kernel: Option<(u32, u32)>) -> Vec<&'static str> {
    SAFE.iter()
        .filter(|(_, min)| kernel.is_none_or(|k| k >= *min))
        .map(|(name, _)| *name)
        .collect()
}

/// This machine's kernel (major, minor), from `uname`.
pub fn host_kernel() -> Option<(u32, u32)> {
    let uts = nix::sys::utsname::uname().ok()?;
    let release = uts.release().to_str()?;
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The sysctls pods may set on this node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowlist {
    names: BTreeMap<String, Namespace>,
    prefixes: BTreeMap<String, Namespace>,
}

impl Allowlist {
    /// Upstream `NewAllowlist(SafeSysctlAllowlist() + allowedUnsafeSysctls)`.
    ///
    /// ```
    /// use actlet::sysctl::{Allowlist, SysctlError};
    /// assert!(Allowlist::new(["kernel.msg*", "net.core.somaxconn"], Some((6, 1))).is_ok());
    /// assert_eq!(Allowlist::new(["kernel.panic"], None), Err(SysctlError::NotNamespaced("kernel.panic".into())));
    /// assert!(matches!(Allowlist::new(["Kernel.*.x"], None), Err(SysctlError::Invalid(_))));
    /// ```
    pub fn new<S: AsRef<str>>(
        allowed_unsafe: impl IntoIterator<Item = S>,
        kernel: Option<(u32, u32)>,
    ) -> Result<Self, SysctlError> {
        let mut out = Self::default();
        let safe = safe_sysctls(kernel).into_iter().map(str::to_string);
        for pattern in safe.chain(allowed_unsafe.into_iter().map(|s| s.as_ref().to_string())) {
            if !valid_pattern(&pattern) {
                return Err(SysctlError::Invalid(pattern));
            }
            let name = normalize_name(&pattern);
            let (name, prefixed) = match name.find('*') {
                Some(i) => (name[..i].to_string(), true),
                None => (name, false),
            };
            let ns = namespace_of(&name).ok_or_else(|| SysctlError::NotNamespaced(name.clone()))?;
            if prefixed {
                out.prefixes.insert(name, ns);
            } else {
                out.names.insert(name, ns);
            }
        }
        Ok(out)
    }

    /// Upstream `validateSysctl`: `Err` with the reason a pod may not set
    /// `sysctl`.
    pub fn validate(&self, sysctl: &str, host_net: bool, host_ipc: bool) -> Result<(), String> {
        let sysctl = normalize_name(sysctl);
        let ns = self.names.get(&sysctl).copied().or_else(|| {
            self.prefixes
                .iter()
                .find(|(p, _)| sysctl.starts_with(p.as_str()))
                .map(|(_, ns)| *ns)
        });
        match ns {
            Some(ns @ Namespace::Ipc) if host_ipc => Err(format!("{sysctl:?} not allowed with host {ns} enabled")),
            Some(ns @ Namespace::Net) if host_net => Err(format!("{sysctl:?} not allowed with host {ns} enabled")),
            Some(_) => Ok(()),
            None => Err(format!("{sysctl:?} not allowlisted")),
        }
    }

    /// Upstream `Admit`: `Err((reason, message))` for a pod setting a sysctl
    /// it may not.
    ///
    /// ```
    /// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "p"},
    ///     "spec": {"containers": [], "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}
    /// })).unwrap();
    /// let safe_only = actlet::sysctl::Allowlist::new(Vec::<String>::new(), None).unwrap();
    /// let (reason, message) = safe_only.admit(&pod).unwrap_err();
    /// assert_eq!((reason, message.as_str()), ("SysctlForbidden", r#"forbidden sysctl: "kernel.msgmax" not allowlisted"#));
    /// ```
    pub fn admit(&self, pod: &Pod) -> Result<(), (&'static str, String)> {
        let Some(spec) = pod.spec.as_ref() else {
            return Ok(());
        };
        let sysctls = spec.security_context.as_ref().and_then(|s| s.sysctls.as_deref());
        let (host_net, host_ipc) = (spec.host_network.unwrap_or(false), spec.host_ipc.unwrap_or(false));
        for s in sysctls.unwrap_or_default() {
            self.validate(&s.name, host_net, host_ipc)
                .map_err(|e| (FORBIDDEN_REASON, format!("forbidden sysctl: {e}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safe() -> Allowlist {
        Allowlist::new(Vec::<String>::new(), Some((6, 1))).unwrap_or_default()
    }

    #[test]
    fn safe_sysctls_pass_unsafe_ones_need_the_allowlist() {
        assert_eq!(safe().validate("kernel.shm_rmid_forced", false, false), Ok(()));
        assert_eq!(
            safe().validate("net/ipv4/tcp_syncookies", false, false),
            Ok(()),
            "slashes"
        );
        assert_eq!(
            safe().validate("kernel.msgmax", false, false),
            Err("\"kernel.msgmax\" not allowlisted".into())
        );
        let more = Allowlist::new(["kernel.msg*", "net.core.somaxconn"], Some((6, 1))).unwrap_or_default();
        assert_eq!(more.validate("kernel.msgmax", false, false), Ok(()));
        assert_eq!(more.validate("net.core.somaxconn", false, false), Ok(()));
        assert!(
            more.validate("net.core.rmem_max", false, false).is_err(),
            "exact name only"
        );
    }

    #[test]
    fn host_namespaces_forbid_their_sysctls() {
        assert_eq!(
            safe().validate("net.ipv4.tcp_syncookies", true, false),
            Err("\"net.ipv4.tcp_syncookies\" not allowed with host net enabled".into())
        );
        assert_eq!(
            safe().validate("kernel.shm_rmid_forced", false, true),
            Err("\"kernel.shm_rmid_forced\" not allowed with host ipc enabled".into())
        );
        assert_eq!(safe().validate("kernel.shm_rmid_forced", true, false), Ok(()));
    }

    #[test]
    fn bad_allowlist_entries_are_refused_with_the_reason() {
        for bad in [
            "",
            "Kernel.msgmax",
            "kernel..msgmax",
            "kernel.msg*max",
            "-kernel.x",
            "kernel.*.x",
        ] {
            assert!(
                matches!(Allowlist::new([bad], None), Err(SysctlError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            Allowlist::new(["vm.swappiness"], None),
            Err(SysctlError::NotNamespaced("vm.swappiness".into()))
        );
        assert!(Allowlist::new(["fs.mqueue.*"], None).is_ok());
    }

    #[test]
    fn kernels_gate_the_newer_safe_sysctls() {
        assert!(!safe_sysctls(Some((4, 14))).contains(&"net.ipv4.tcp_wmem"));
        assert!(safe_sysctls(Some((4, 15))).contains(&"net.ipv4.tcp_wmem"));
        assert!(safe_sysctls(Some((3, 10))).contains(&"net.ipv4.ping_group_range"));
        assert!(host_kernel().is_some(), "uname works here");
    }
}
