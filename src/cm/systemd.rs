//! `--cgroup-driver=systemd`: the kubelet's slices (`kubepods.slice`, the QoS
//! slices, `kubepods-<qos>-pod<uid>.slice`) are transient units systemd
//! knows, created, updated and stopped over D-Bus as upstream's libcontainer
//! systemd manager does (`StartTransientUnit` with `Wants=` the parent slice,
//! accounting on, `DefaultDependencies=no` and the resource properties;
//! `SetUnitProperties`; `StopUnit`), so that systemd does not reset their
//! limits when it realizes a slice under which runc starts a scope. The
//! cgroupfs values are written as well (the driver below), as libcontainer
//! does. Without a system bus the driver works on cgroupfs alone, with one
//! warning.
//!
//! Every call here blocks on the D-Bus round trip: [`CgroupFs`] is only
//! called from the blocking pool.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zbus::zvariant::{OwnedObjectPath, Value};

use super::fs::{CgroupError, CgroupFs, CgroupVersion, Cgroupfs};
use super::resources::{ResourceConfig, cpu_shares_to_weight};

/// Every D-Bus call's deadline.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1"
)]
trait SystemdManager {
    fn start_transient_unit(
        &self,
        name: &str,
        mode: &str,
        properties: &[(&str, Value<'_>)],
        aux: &[(&str, &[(&str, Value<'_>)])],
    ) -> zbus::Result<OwnedObjectPath>;

    fn set_unit_properties(&self, name: &str, runtime: bool, properties: &[(&str, Value<'_>)]) -> zbus::Result<()>;

    fn stop_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;
}

/// The parent of a slice (`kubepods-burstable.slice` → `kubepods.slice`,
/// `kubepods.slice` → `-.slice`, systemd's root slice).
///
/// ```
/// use actlet::cm::systemd::slice_parent;
/// assert_eq!(slice_parent("kubepods-burstable-pod12.slice"), "kubepods-burstable.slice");
/// assert_eq!(slice_parent("kubepods.slice"), "-.slice");
/// ```
pub fn slice_parent(unit: &str) -> String {
    let base = unit.strip_suffix(".slice").unwrap_or(unit);
    match base.rsplit_once('-') {
        Some((parent, _)) if !parent.is_empty() => format!("{parent}.slice"),
        _ => "-.slice".to_string(),
    }
}

/// The unit of a cgroup name as the systemd driver spells it (its last
/// component: `/kubepods.slice/kubepods-burstable.slice` →
/// `kubepods-burstable.slice`).
pub fn unit_of(path: &str) -> &str {
    path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path)
}

/// The resource properties of `res` (libcontainer's names): memory, CPU
/// weight (v2) or shares (v1), the CFS quota per second (rounded up to
/// 10 ms as libcontainer does) and its period, the task limit.
pub fn resource_properties(res: &ResourceConfig, version: CgroupVersion) -> Vec<(&'static str, u64)> {
    let v2 = version == CgroupVersion::V2;
    let mut out = vec![];
    if let Some(m) = res.memory.filter(|m| *m > 0) {
        out.push((
            if v2 { "MemoryMax" } else { "MemoryLimit" },
            u64::try_from(m).unwrap_or(u64::MAX),
        ));
    }
    if let Some(s) = res.cpu_shares {
        if v2 {
            out.push(("CPUWeight", cpu_shares_to_weight(s)));
        } else {
            out.push(("CPUShares", s));
        }
    }
    if let Some(period) = res.cpu_period.filter(|p| *p > 0) {
        out.push(("CPUQuotaPeriodUSec", period));
        if let Some(quota) = res.cpu_quota {
            let per_sec = match u64::try_from(quota) {
                Ok(q) if q > 0 => {
                    let usec = q.saturating_mul(1_000_000) / period;
                    usec.div_ceil(10_000) * 10_000
                }
                _ => u64::MAX, // unlimited
            };
            out.push(("CPUQuotaPerSecUSec", per_sec));
        }
    }
    if let Some(p) = res.pids_limit {
        out.push(("TasksMax", u64::try_from(p).ok().filter(|p| *p > 0).unwrap_or(u64::MAX)));
    }
    out
}

/// The properties a new slice starts with.
fn slice_properties(unit: &str, res: &ResourceConfig, version: CgroupVersion) -> Vec<(&'static str, Value<'static>)> {
    let mut props = vec![
        ("Description", Value::from(format!("kubelet slice {unit}"))),
        ("Wants", Value::from(vec![slice_parent(unit)])),
        ("MemoryAccounting", Value::from(true)),
        ("CPUAccounting", Value::from(true)),
        ("TasksAccounting", Value::from(true)),
        ("DefaultDependencies", Value::from(false)),
    ];
    props.extend(
        resource_properties(res, version)
            .into_iter()
            .map(|(k, v)| (k, Value::from(v))),
    );
    props
}

/// Whether `e` is the D-Bus error `name` (libcontainer's `isUnitExists`).
fn is_error(e: &zbus::Error, name: &str) -> bool {
    matches!(e, zbus::Error::MethodError(n, _, _) if n.as_str() == name)
}

/// A systemd manager reached over D-Bus (connected on first use).
pub struct SystemdSlices {
    handle: tokio::runtime::Handle,
    address: Option<String>,
    proxy: Mutex<Option<SystemdManagerProxy<'static>>>,
    told: AtomicBool,
}

impl std::fmt::Debug for SystemdSlices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemdSlices").field("address", &self.address).finish()
    }
}

impl SystemdSlices {
    /// systemd at `address` (`None`: the system bus); calls run on `handle`.
    pub fn new(handle: tokio::runtime::Handle, address: Option<String>) -> Self {
        Self {
            handle,
            address,
            proxy: Mutex::new(None),
            told: AtomicBool::new(false),
        }
    }

    fn bus(&self) -> String {
        self.address.clone().unwrap_or_else(|| "system bus".into())
    }

    /// Runs `call` against systemd (blocking); `None` with one warning when
    /// systemd cannot be reached.
    fn call<T>(
        &self,
        what: &str,
        call: impl AsyncFnOnce(&SystemdManagerProxy<'static>) -> zbus::Result<T>,
    ) -> Option<zbus::Result<T>> {
        let address = self.address.clone();
        let cached = self.proxy.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let result = self.handle.block_on(tokio::time::timeout(CALL_TIMEOUT, async move {
            let proxy = match cached {
                Some(p) => p,
                None => {
                    let conn = match &address {
                        None => zbus::Connection::system().await?,
                        Some(a) => zbus::connection::Builder::address(a.as_str())?.build().await?,
                    };
                    SystemdManagerProxy::new(&conn).await?
                }
            };
            let out = call(&proxy).await;
            Ok::<_, zbus::Error>((proxy, out))
        }));
        match result {
            Ok(Ok((proxy, out))) => {
                *self.proxy.lock().unwrap_or_else(|e| e.into_inner()) = Some(proxy);
                Some(out)
            }
            Ok(Err(e)) => {
                if !self.told.swap(true, Ordering::Relaxed) {
                    tracing::warn!(bus = %self.bus(), error = %e, "cgroupDriver systemd: systemd is not reachable over D-Bus; slices are plain cgroupfs directories");
                }
                None
            }
            Err(_) => {
                tracing::warn!(bus = %self.bus(), what, "systemd did not answer within {CALL_TIMEOUT:?}");
                *self.proxy.lock().unwrap_or_else(|e| e.into_inner()) = None;
                None
            }
        }
    }

    /// Starts `unit` as a transient slice with `res` (an existing one gets
    /// its properties set instead).
    pub fn start_slice(&self, unit: &str, res: &ResourceConfig, version: CgroupVersion) {
        let props = slice_properties(unit, res, version);
        let started = self.call("StartTransientUnit", async |p| {
            p.start_transient_unit(unit, "replace", &props, &[]).await
        });
        match started {
            Some(Ok(_job)) => tracing::debug!(unit, "started transient slice"),
            Some(Err(e)) if is_error(&e, "org.freedesktop.systemd1.UnitExists") => {
                self.set_properties(unit, res, version)
            }
            Some(Err(e)) => tracing::warn!(unit, error = %e, "systemd refused the slice; cgroupfs only"),
            None => {}
        }
    }

    /// Sets `res` on `unit`.
    pub fn set_properties(&self, unit: &str, res: &ResourceConfig, version: CgroupVersion) {
        let props = resource_properties(res, version);
        if props.is_empty() {
            return;
        }
        let set = self.call("SetUnitProperties", async |p| {
            let props: Vec<(&str, Value<'_>)> = props.iter().map(|(k, v)| (*k, Value::from(*v))).collect();
            p.set_unit_properties(unit, true, &props).await
        });
        if let Some(Err(e)) = set {
            tracing::warn!(unit, error = %e, "systemd did not set the slice's properties");
        }
    }

    /// Stops `unit` (systemd removes its cgroup).
    pub fn stop_slice(&self, unit: &str) {
        let stopped = self.call("StopUnit", async |p| p.stop_unit(unit, "replace").await);
        match stopped {
            Some(Ok(_)) => tracing::debug!(unit, "stopped slice"),
            Some(Err(e)) if is_error(&e, "org.freedesktop.systemd1.NoSuchUnit") => {}
            Some(Err(e)) => tracing::warn!(unit, error = %e, "systemd did not stop the slice"),
            None => {}
        }
    }
}

/// cgroupfs with the slices also declared to systemd.
#[derive(Debug)]
pub struct SystemdCgroupfs {
    inner: Cgroupfs,
    slices: std::sync::Arc<SystemdSlices>,
}

impl SystemdCgroupfs {
    /// `inner` plus `slices`.
    pub fn new(inner: Cgroupfs, slices: std::sync::Arc<SystemdSlices>) -> Self {
        Self { inner, slices }
    }
}

impl CgroupFs for SystemdCgroupfs {
    fn exists(&self, path: &str) -> bool {
        self.inner.exists(path)
    }

    fn create(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        self.slices.start_slice(unit_of(path), res, self.inner.version());
        self.inner.create(path, res)
    }

    fn update(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        self.slices.set_properties(unit_of(path), res, self.inner.version());
        self.inner.update(path, res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_map_to_libcontainers_properties() {
        let res = ResourceConfig {
            cpu_shares: Some(1024),
            cpu_quota: Some(150_000),
            cpu_period: Some(100_000),
            memory: Some(128 << 20),
            pids_limit: Some(-1),
        };
        assert_eq!(
            resource_properties(&res, CgroupVersion::V2),
            [
                ("MemoryMax", 128 << 20),
                ("CPUWeight", 39),
                ("CPUQuotaPeriodUSec", 100_000),
                ("CPUQuotaPerSecUSec", 1_500_000),
                ("TasksMax", u64::MAX)
            ]
        );
        let v1 = resource_properties(&res, CgroupVersion::V1);
        assert!(v1.contains(&("MemoryLimit", 128 << 20)) && v1.contains(&("CPUShares", 1024)));
        // 1 ms of quota per 100 ms rounds up to 10 ms per second.
        let small = ResourceConfig {
            cpu_quota: Some(1_000),
            cpu_period: Some(100_000),
            ..Default::default()
        };
        assert!(resource_properties(&small, CgroupVersion::V2).contains(&("CPUQuotaPerSecUSec", 10_000)));
    }

    #[test]
    fn units_and_parents() {
        assert_eq!(
            unit_of("/kubepods.slice/kubepods-besteffort.slice"),
            "kubepods-besteffort.slice"
        );
        assert_eq!(slice_parent("kubepods-besteffort.slice"), "kubepods.slice");
    }
}
