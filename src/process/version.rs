//! `actlet --version` in upstream's format. Upstream prints
//! `Kubernetes v1.36.2`; kubeadm's preflight parses that line with
//! `^\s*Kubernetes v(\d+\.\d+\.\d+[-0-9a-zA-Z_.+]*)\s*$`, so actlet prints
//! exactly that shape with the version it reports as the node's
//! `kubeletVersion` (one constant, so the two never disagree):
//! `Kubernetes v1.36.0-actlet`. `--version=raw` adds actlet's own version.

use crate::cluster::node::status::KUBELET_VERSION;

/// The `--version` line: `Kubernetes <kubeletVersion>`.
///
/// ```
/// let line = actlet::process::version::line();
/// assert!(line.starts_with("Kubernetes v1."));
/// ```
pub fn line() -> String {
    format!("Kubernetes {KUBELET_VERSION}")
}

/// The `--version=raw` text (upstream prints its `version.Info` struct).
///
/// ```
/// let raw = actlet::process::version::raw();
/// assert!(raw.contains("GitVersion:\"v1.") && raw.contains("Actlet:\"v0."));
/// ```
pub fn raw() -> String {
    let v = KUBELET_VERSION.trim_start_matches('v');
    let mut parts = v.split(['.', '-', '+']);
    let major = parts.next().unwrap_or("");
    let minor = parts.next().unwrap_or("");
    format!(
        "version.Info{{Major:\"{major}\", Minor:\"{minor}\", GitVersion:\"{KUBELET_VERSION}\", Actlet:\"v{}\", \
         CRI:\"runtime.v1\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        crate::kubelet::go_arch(),
    )
}

/// What `--version=<value>` asks for: `Some(text)` to print and exit, `None`
/// to run (`false`), or an error for another value (as upstream's verflag).
///
/// ```
/// use actlet::process::version::for_flag;
/// assert_eq!(for_flag("true").unwrap().unwrap(), actlet::process::version::line());
/// assert!(for_flag("false").unwrap().is_none());
/// assert!(for_flag("maybe").is_err());
/// ```
pub fn for_flag(value: &str) -> Result<Option<String>, String> {
    match value {
        "raw" => Ok(Some(raw())),
        v => match v.parse::<bool>() {
            Ok(true) => Ok(Some(line())),
            Ok(false) => Ok(None),
            Err(_) => Err(format!(
                "invalid argument {v:?} for \"--version\" flag: want true, false or raw"
            )),
        },
    }
}
