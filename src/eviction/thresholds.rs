//! Pure: eviction signals and thresholds, parsed as upstream's
//! `eviction.ParseThresholdConfig` parses `evictionHard`, `evictionSoft`,
//! `evictionSoftGracePeriod` and `evictionMinimumReclaim`
//! (`pkg/kubelet/eviction/helpers.go`), with its error messages.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::kubelet_config_file::GoDuration;
use crate::quantity::ParsedQuantity;

/// An eviction signal (upstream `evictionapi.Signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    /// `memory.available`: the node's memory minus its working set.
    MemoryAvailable,
    /// `allocatableMemory.available`: node allocatable minus the pods' working set.
    AllocatableMemoryAvailable,
    /// `nodefs.available`: free bytes of the kubelet's root dir filesystem.
    NodeFsAvailable,
    /// `nodefs.inodesFree`.
    NodeFsInodesFree,
    /// `imagefs.available`: free bytes of the runtime's image filesystem.
    ImageFsAvailable,
    /// `imagefs.inodesFree`.
    ImageFsInodesFree,
    /// `containerfs.available`: the writable layers' filesystem (the image
    /// filesystem unless the runtime splits them, KEP-4191).
    ContainerFsAvailable,
    /// `containerfs.inodesFree`.
    ContainerFsInodesFree,
    /// `pid.available`: the node's pid limit minus the running processes.
    PidAvailable,
}

/// Every signal, in upstream's declaration order.
pub const SIGNALS: [Signal; 9] = [
    Signal::MemoryAvailable,
    Signal::AllocatableMemoryAvailable,
    Signal::NodeFsAvailable,
    Signal::NodeFsInodesFree,
    Signal::ImageFsAvailable,
    Signal::ImageFsInodesFree,
    Signal::ContainerFsAvailable,
    Signal::ContainerFsInodesFree,
    Signal::PidAvailable,
];

/// The node condition a starved resource raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pressure {
    /// `MemoryPressure`.
    Memory,
    /// `DiskPressure`.
    Disk,
    /// `PIDPressure`.
    Pid,
}

impl Pressure {
    /// The node condition type.
    pub fn condition(self) -> &'static str {
        match self {
            Pressure::Memory => "MemoryPressure",
            Pressure::Disk => "DiskPressure",
            Pressure::Pid => "PIDPressure",
        }
    }
}

impl Signal {
    /// Parses an upstream signal name.
    ///
    /// ```
    /// use actlet::eviction::Signal;
    /// assert_eq!(Signal::parse("nodefs.inodesFree"), Some(Signal::NodeFsInodesFree));
    /// assert_eq!(Signal::parse("memory.free"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        SIGNALS.into_iter().find(|sig| sig.as_str() == s)
    }

    /// The upstream name.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::AllocatableMemoryAvailable => "allocatableMemory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::ContainerFsAvailable => "containerfs.available",
            Signal::ContainerFsInodesFree => "containerfs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// The resource it measures (upstream `signalToResource`): `memory`,
    /// `ephemeral-storage`, `inodes` or `pids`.
    pub fn resource(self) -> &'static str {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => "memory",
            Signal::NodeFsAvailable | Signal::ImageFsAvailable | Signal::ContainerFsAvailable => "ephemeral-storage",
            Signal::NodeFsInodesFree | Signal::ImageFsInodesFree | Signal::ContainerFsInodesFree => "inodes",
            Signal::PidAvailable => "pids",
        }
    }

    /// The node condition it raises (upstream `signalToNodeCondition`).
    pub fn pressure(self) -> Pressure {
        match self.resource() {
            "memory" => Pressure::Memory,
            "pids" => Pressure::Pid,
            _ => Pressure::Disk,
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A threshold's value: an absolute quantity or a share of capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Bytes, inodes or pids.
    Quantity(i64),
    /// A fraction of capacity in `[0, 1]`.
    Percentage(f64),
}

impl Value {
    /// The absolute value against `capacity` (upstream `GetThresholdQuantity`:
    /// the percentage is a `float32`, the product truncates).
    pub fn quantity(self, capacity: i64) -> i64 {
        match self {
            Value::Quantity(q) => q,
            // As upstream's int64(float64(capacity) * float64(float32 percentage)).
            Value::Percentage(p) => (capacity as f64 * f64::from(p as f32)) as i64,
        }
    }
}

/// One threshold (upstream `evictionapi.Threshold`; the operator is always
/// `LessThan`).
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// What is measured.
    pub signal: Signal,
    /// The level below which the threshold is met.
    pub value: Value,
    /// Zero for a hard threshold; a soft one must be met this long.
    pub grace_period: Duration,
    /// How far past the threshold to reclaim once it is met.
    pub min_reclaim: Option<Value>,
}

impl Threshold {
    /// Whether this is a hard threshold (no grace period).
    pub fn is_hard(&self) -> bool {
        self.grace_period.is_zero()
    }
}

/// What the hard thresholds take off node allocatable (upstream
/// `hardEvictionReservation`: `memory.available` from memory,
/// `nodefs.available` from ephemeral storage).
///
/// ```
/// use actlet::eviction::thresholds::{HardReservation, Value};
/// let r = HardReservation::upstream_default();
/// assert_eq!(r.amounts(1 << 30, 1000), (100 << 20, 100));
/// assert_eq!(HardReservation::default().amounts(1 << 30, 1000), (0, 0)); // no thresholds
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HardReservation {
    /// The hard `memory.available` threshold.
    pub memory: Option<Value>,
    /// The hard `nodefs.available` threshold.
    pub nodefs: Option<Value>,
}

impl HardReservation {
    /// From the configured thresholds (the hard ones count).
    pub fn of(thresholds: &[Threshold]) -> Self {
        let hard = |s: Signal| {
            thresholds
                .iter()
                .find(|t| t.is_hard() && t.signal == s)
                .map(|t| t.value)
        };
        Self {
            memory: hard(Signal::MemoryAvailable),
            nodefs: hard(Signal::NodeFsAvailable),
        }
    }

    /// Upstream's default hard thresholds: `memory.available<100Mi`, `nodefs.available<10%`.
    pub fn upstream_default() -> Self {
        Self {
            memory: Some(Value::Quantity(100 << 20)),
            nodefs: Some(Value::Percentage(0.1)),
        }
    }

    /// (memory, ephemeral storage) reserved against those capacities.
    pub fn amounts(&self, memory_capacity: i64, storage_capacity: i64) -> (i64, i64) {
        (
            self.memory.map_or(0, |v| v.quantity(memory_capacity)),
            self.nodefs.map_or(0, |v| v.quantity(storage_capacity)),
        )
    }
}

/// A threshold setting that cannot be used; the message is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ThresholdError(pub String);

fn percentage(signal: &str, val: &str) -> Result<f64, ThresholdError> {
    let number = val.trim_end_matches('%');
    let p: f64 = number
        .parse()
        .map_err(|_| ThresholdError(format!("invalid percentage {val} for {signal}")))?;
    Ok(p / 100.0)
}

fn signal_of(name: &str) -> Result<Signal, ThresholdError> {
    Signal::parse(name).ok_or_else(|| ThresholdError(format!("unsupported eviction signal {name}")))
}

/// Upstream `parseThresholdStatement`: `None` for `0%` and `100%` (ignored).
fn statement(name: &str, val: &str) -> Result<Option<Threshold>, ThresholdError> {
    let signal = signal_of(name)?;
    let value = if val.ends_with('%') {
        if val == "0%" || val == "100%" {
            return Ok(None);
        }
        let p = percentage(name, val)?;
        if p < 0.0 {
            return Err(ThresholdError(format!(
                "eviction percentage threshold {name} must be >= 0%: {val}"
            )));
        }
        if p > 1.0 {
            return Err(ThresholdError(format!(
                "eviction percentage threshold {name} must be <= 100%: {val}"
            )));
        }
        Value::Percentage(p)
    } else {
        let q = ParsedQuantity::parse(val).map_err(|e| ThresholdError(e.to_string()))?;
        if q.nanos() <= 0 {
            return Err(ThresholdError(format!(
                "eviction threshold {name} must be positive: {val}"
            )));
        }
        Value::Quantity(q.value())
    };
    Ok(Some(Threshold {
        signal,
        value,
        grace_period: Duration::ZERO,
        min_reclaim: None,
    }))
}

fn min_reclaim(name: &str, val: &str) -> Result<Value, ThresholdError> {
    if val.ends_with('%') {
        let p = percentage(name, val)?;
        if !(0.0..=1.0).contains(&p) {
            return Err(ThresholdError(format!(
                "min-reclaim {name} must be >= 0% and <= 100%: {val}"
            )));
        }
        return Ok(Value::Percentage(p));
    }
    let q = ParsedQuantity::parse(val).map_err(|e| ThresholdError(e.to_string()))?;
    if q.nanos() < 0 {
        return Err(ThresholdError(format!("min-reclaim {name} must be positive: {val}")));
    }
    Ok(Value::Quantity(q.value()))
}

/// The four eviction maps of a `KubeletConfiguration` (or their flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThresholdSettings {
    /// `evictionHard` (`--eviction-hard`).
    pub hard: BTreeMap<String, String>,
    /// `evictionSoft` (`--eviction-soft`).
    pub soft: BTreeMap<String, String>,
    /// `evictionSoftGracePeriod` (`--eviction-soft-grace-period`).
    pub soft_grace_period: BTreeMap<String, String>,
    /// `evictionMinimumReclaim` (`--eviction-minimum-reclaim`).
    pub minimum_reclaim: BTreeMap<String, String>,
}

/// Upstream `ParseThresholdConfig`: hard thresholds, then soft ones (each
/// needs a grace period), minimum reclaims attached, and when
/// `enforceNodeAllocatable` has `pods`, an `allocatableMemory.available`
/// twin of each `memory.available` threshold.
///
/// ```
/// use std::collections::BTreeMap;
/// use actlet::eviction::{Signal, ThresholdSettings, Value, parse_thresholds};
/// let m = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
/// let s = ThresholdSettings {
///     hard: m(&[("memory.available", "100Mi"), ("nodefs.available", "10%")]),
///     soft: m(&[("memory.available", "300Mi")]),
///     soft_grace_period: m(&[("memory.available", "1m30s")]),
///     ..Default::default()
/// };
/// let t = parse_thresholds(&s, false).unwrap();
/// assert_eq!(t.len(), 3);
/// assert_eq!((t[0].signal, t[0].value), (Signal::MemoryAvailable, Value::Quantity(100 << 20)));
/// assert!(t[0].is_hard() && !t[2].is_hard());
/// let bad = ThresholdSettings { soft: m(&[("memory.available", "300Mi")]), ..Default::default() };
/// assert_eq!(parse_thresholds(&bad, false).unwrap_err().to_string(),
///            "grace period must be specified for the soft eviction threshold memory.available");
/// ```
pub fn parse_thresholds(
    settings: &ThresholdSettings,
    enforce_pods_allocatable: bool,
) -> Result<Vec<Threshold>, ThresholdError> {
    let mut out = vec![];
    for (k, v) in &settings.hard {
        out.extend(statement(k, v)?);
    }
    let mut grace = BTreeMap::new();
    for (k, v) in &settings.soft_grace_period {
        let signal = signal_of(k)?;
        let d = v
            .parse::<GoDuration>()
            .ok()
            .and_then(|d| d.to_std())
            .ok_or_else(|| ThresholdError(format!("invalid grace period {v} for {k}")))?;
        if d.is_zero() {
            return Err(ThresholdError(format!(
                "eviction grace period {k} must be positive: {v}"
            )));
        }
        grace.insert(signal, d);
    }
    for (k, v) in &settings.soft {
        if let Some(mut t) = statement(k, v)? {
            t.grace_period = *grace.get(&t.signal).ok_or_else(|| {
                ThresholdError(format!(
                    "grace period must be specified for the soft eviction threshold {}",
                    t.signal
                ))
            })?;
            out.push(t);
        }
    }
    let mut reclaims = BTreeMap::new();
    for (k, v) in &settings.minimum_reclaim {
        reclaims.insert(signal_of(k)?, min_reclaim(k, v)?);
    }
    for t in &mut out {
        t.min_reclaim = reclaims.get(&t.signal).copied();
    }
    if enforce_pods_allocatable {
        let twins: Vec<_> = out
            .iter()
            .filter(|t| t.signal == Signal::MemoryAvailable)
            .map(|t| Threshold {
                signal: Signal::AllocatableMemoryAvailable,
                ..t.clone()
            })
            .collect();
        out.extend(twins);
    }
    Ok(out)
}

/// Parses a flag value `a<1,b<2` (thresholds) or `a=1,b=2` (grace periods,
/// minimum reclaims) into a map, as upstream's `MapStringString` flags;
/// `None` names the malformed entry.
///
/// ```
/// use actlet::eviction::thresholds::flag_map;
/// let m = flag_map("memory.available<100Mi, nodefs.available<10%", '<').unwrap();
/// assert_eq!(m["nodefs.available"], "10%");
/// assert_eq!(flag_map("memory.available=1m", '<').unwrap_err(), "memory.available=1m");
/// ```
pub fn flag_map(value: &str, sep: char) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for kv in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once(sep).ok_or_else(|| kv.to_string())?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn hard(kv: &[(&str, &str)]) -> Result<Vec<Threshold>, ThresholdError> {
        parse_thresholds(
            &ThresholdSettings {
                hard: m(kv),
                ..Default::default()
            },
            false,
        )
    }

    #[test]
    fn upstream_messages_for_bad_values() {
        let e = |kv: &[(&str, &str)]| hard(kv).unwrap_err().to_string();
        assert_eq!(e(&[("memory.free", "1Gi")]), "unsupported eviction signal memory.free");
        assert_eq!(
            e(&[("nodefs.available", "150%")]),
            "eviction percentage threshold nodefs.available must be <= 100%: 150%"
        );
        assert_eq!(
            e(&[("nodefs.available", "-5%")]),
            "eviction percentage threshold nodefs.available must be >= 0%: -5%"
        );
        assert_eq!(
            e(&[("memory.available", "0")]),
            "eviction threshold memory.available must be positive: 0"
        );
        assert!(e(&[("memory.available", "lots")]).contains("quantities must match"));
    }

    #[test]
    fn zero_and_full_percentages_are_ignored() {
        assert!(
            hard(&[("nodefs.available", "0%"), ("imagefs.available", "100%")])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn minimum_reclaim_and_allocatable_twins() {
        let s = ThresholdSettings {
            hard: m(&[("memory.available", "100Mi"), ("nodefs.available", "10%")]),
            minimum_reclaim: m(&[("memory.available", "50Mi"), ("nodefs.available", "5%")]),
            ..Default::default()
        };
        let t = parse_thresholds(&s, true).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].min_reclaim, Some(Value::Quantity(50 << 20)));
        assert_eq!(t[1].min_reclaim, Some(Value::Percentage(0.05)));
        assert_eq!(t[2].signal, Signal::AllocatableMemoryAvailable);
        assert_eq!(t[2].value, Value::Quantity(100 << 20));
    }

    #[test]
    fn percentage_quantity_truncates_like_upstream() {
        assert_eq!(Value::Percentage(0.1).quantity(1005), 100);
        assert_eq!(Value::Quantity(7).quantity(1005), 7);
    }

    #[test]
    fn signals_map_to_resources_and_conditions() {
        for s in SIGNALS {
            assert_eq!(Signal::parse(s.as_str()), Some(s));
        }
        assert_eq!(Signal::ImageFsAvailable.resource(), "ephemeral-storage");
        assert_eq!(Signal::NodeFsInodesFree.resource(), "inodes");
        assert_eq!(Signal::PidAvailable.pressure().condition(), "PIDPressure");
        assert_eq!(Signal::AllocatableMemoryAvailable.pressure(), Pressure::Memory);
        assert_eq!(Signal::ContainerFsInodesFree.pressure(), Pressure::Disk);
    }

    #[test]
    fn soft_grace_periods_must_be_valid() {
        let s = ThresholdSettings {
            soft: m(&[("memory.available", "1Gi")]),
            soft_grace_period: m(&[("memory.available", "soon")]),
            ..Default::default()
        };
        assert_eq!(
            parse_thresholds(&s, false).unwrap_err().to_string(),
            "invalid grace period soon for memory.available"
        );
    }
}
