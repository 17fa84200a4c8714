//! `KubeletConfiguration` files (`kubelet.config.k8s.io/v1beta1`): `--config`,
//! the `--config-dir` drop-ins and the command line, merged with upstream's
//! precedence — defaults ← file ← drop-ins (lexical order) ← flags given on
//! the command line — then defaulted, validated and mapped onto the flags and
//! [`KubeletConfig`](crate::KubeletConfig).
//!
//! Every upstream field is accepted; the ones actlet does not honour are
//! listed in [`fields::FIELDS`] and get one warning each when set. Unknown
//! fields are warnings (upstream's lenient decoding), bad values are errors
//! naming the field and the file (or flag) that set it.
//!
//! ```
//! use clap::{CommandFactory, FromArgMatches};
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("kubelet.yaml");
//! std::fs::write(&file, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\nsyncFrequency: 30s\n").unwrap();
//! let args = ["actlet", "--config", file.to_str().unwrap(), "--max-pods=20"];
//! let m = actlet::cli::Cli::command().try_get_matches_from(args).unwrap();
//! let cli = actlet::cli::Cli::from_arg_matches(&m).unwrap();
//! let explicit = actlet::kubelet_config_file::flags::explicit_flags(&m);
//! let resolved = actlet::kubelet_config_file::resolve(&cli.flags, &explicit).unwrap();
//! assert_eq!(resolved.flags.max_pods, 20); // the command line wins
//! assert_eq!(resolved.flags.sync_frequency, std::time::Duration::from_secs(30)); // the file beats the default
//! ```

pub mod defaults;
mod duration;
pub mod effective;
pub mod fields;
pub mod flags;
pub mod gates;
pub mod load;
pub mod types;
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

pub use duration::GoDuration;
pub use effective::Resolved;
pub use types::KubeletConfiguration;

use crate::cli::KubeletFlags;
use crate::cluster::node::flags::{parse_reserved, parse_taints};

/// Where a field's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The `--config` file.
    File(PathBuf),
    /// A drop-in of `--config-dir`.
    DropIn(PathBuf),
    /// A command-line flag.
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::DropIn(p) => write!(f, "drop-in {}", p.display()),
            Origin::Flag(flag) => write!(f, "command-line flag {flag}"),
        }
    }
}

/// Why the configuration cannot be used (the process exits with code 2).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read or decoded.
    #[error("failed to load kubelet config file, path: {}, error: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The drop-in directory could not be read.
    #[error("failed to walk through kubelet dropin directory {}: {reason}", dir.display())]
    DropInDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// Feature gates that upstream refuses.
    #[error("failed to set feature gates ({origin}): {reason}")]
    FeatureGates {
        /// Where the gates were set.
        origin: String,
        /// Upstream's message.
        reason: String,
    },
    /// Field values upstream (or actlet) refuses, each naming its source.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

fn origin_of(origins: &BTreeMap<String, Origin>, field: &str) -> String {
    origins
        .iter()
        .filter(|(path, _)| *path == field || path.strip_prefix(field).is_some_and(|r| r.starts_with('.')))
        .map(|(_, o)| o.to_string())
        .next_back()
        .unwrap_or_else(|| "the default".into())
}

/// Loads, merges, defaults and validates the configuration the flags ask for
/// (`explicit`: the clap ids given on the command line; see
/// [`flags::explicit_flags`]).
pub fn resolve(cli: &KubeletFlags, explicit: &BTreeSet<String>) -> Result<Resolved, LoadError> {
    let merged = load::load(cli.config.as_deref(), cli.config_dir.as_deref())?;
    let mut flag_warnings = vec![];
    if cli.pod_infra_container_image.is_some() {
        flag_warnings.push(
            "Flag --pod-infra-container-image has been deprecated: the sandbox image is the container runtime's \
             (set it there); actlet accepts the flag and ignores it"
                .to_string(),
        );
    }
    if cli.exit_on_lock_contention && cli.lock_file.is_none() {
        flag_warnings.push("--exit-on-lock-contention has no effect without --lock-file".to_string());
    }
    let source = cli
        .config
        .clone()
        .or_else(|| cli.config_dir.clone())
        .unwrap_or_default();
    let (mut kc, _) = load::decode(&merged.value).map_err(|reason| LoadError::File { path: source, reason })?;
    let mut origins = merged.origins;
    let mut warnings = flag_warnings;
    warnings.extend(merged.warnings);
    flags::overlay(&mut kc, cli, explicit, &mut origins);
    let flag_gates = gates::parse_flag(&cli.feature_gates).map_err(|reason| LoadError::FeatureGates {
        origin: "command-line flag --feature-gates".into(),
        reason,
    })?;
    if !flag_gates.is_empty() {
        let all = kc.feature_gates.get_or_insert_with(Default::default);
        for (k, v) in flag_gates {
            origins.insert(format!("featureGates.{k}"), Origin::Flag("--feature-gates"));
            all.insert(k, v);
        }
    }
    let requested = kc.feature_gates.clone().unwrap_or_default();
    for (name, value) in &requested {
        let origin = origin_of(&origins, &format!("featureGates.{name}"));
        let gate_warnings =
            gates::check(&BTreeMap::from([(name.clone(), *value)])).map_err(|reason| LoadError::FeatureGates {
                origin: origin.clone(),
                reason,
            })?;
        warnings.extend(gate_warnings);
        if gates::lookup(name).is_some_and(|g| g.default != *value) {
            warnings.push(format!(
                "feature gate {name}={value} (set in {origin}): actlet has no switch for it; it behaves as with the default"
            ));
        }
    }
    defaults::apply(&mut kc);
    let errors: Vec<String> = validate::validate(&kc)
        .into_iter()
        .map(|e| format!("{} ({} set in {})", e.message, e.field, origin_of(&origins, e.field)))
        .collect();
    if !errors.is_empty() {
        return Err(LoadError::Invalid(errors));
    }
    let mut baseline = KubeletConfiguration {
        feature_gates: kc.feature_gates.clone(),
        ..Default::default()
    };
    defaults::apply(&mut baseline);
    let as_json = |kc: &KubeletConfiguration| serde_json::to_value(kc).unwrap_or_default();
    warnings.extend(fields::warnings(&origins, &as_json(&kc), &as_json(&baseline)));
    let flags = flags::write_back(&kc, cli);
    let node_checks = [
        ("registerWithTaints", parse_taints(&flags.register_with_taints).err()),
        ("kubeReserved", parse_reserved(&flags.kube_reserved).err()),
        ("systemReserved", parse_reserved(&flags.system_reserved).err()),
    ];
    let errors: Vec<String> = node_checks
        .into_iter()
        .filter_map(|(field, e)| {
            e.map(|e| {
                format!(
                    "invalid configuration: {field}: {e} ({field} set in {})",
                    origin_of(&origins, field)
                )
            })
        })
        .collect();
    if !errors.is_empty() {
        return Err(LoadError::Invalid(errors));
    }
    Ok(Resolved {
        flags,
        effective: kc,
        origins,
        warnings,
    })
}

/// The config parser end to end on arbitrary bytes, for fuzzing: decoding,
/// defaulting, validation and the Go duration syntax must never panic, and
/// a duration that parses prints back to the same value.
///
/// ```
/// actlet::kubelet_config_file::fuzz_one(b"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: 1h\n");
/// actlet::kubelet_config_file::fuzz_one(b"\xff\x00{[");
/// ```
pub fn fuzz_one(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(d) = text.parse::<GoDuration>() {
        assert_eq!(
            d.to_string().parse::<GoDuration>(),
            Ok(d),
            "duration {text:?} round trip"
        );
    }
    let Ok(value) = load::parse_document(text) else { return };
    let Ok((mut kc, _unknown)) = load::decode(&value) else {
        return;
    };
    defaults::apply(&mut kc);
    let _ = validate::validate(&kc);
    let _ = gates::check(&kc.feature_gates.clone().unwrap_or_default());
    let _ = serde_json::to_value(&kc);
}
