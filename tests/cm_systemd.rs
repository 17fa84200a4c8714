//! `--cgroup-driver=systemd` (issue #15): the kubelet's slices are transient
//! units declared to systemd over D-Bus, against a fake systemd served with
//! zbus on a private `dbus-daemon`, over a fake cgroup v2 tree:
//! - the QoS hierarchy: `kubepods.slice` (with node allocatable as
//!   `MemoryMax`), `kubepods-burstable.slice` and
//!   `kubepods-besteffort.slice` (`CPUWeight` 1), each `Wants=` its parent
//!   with accounting on and `DefaultDependencies=no`;
//! - a pod's slice with its limits, and its properties set again when it
//!   already exists;
//! - `StopUnit` for a pod slice the GC removes.

#[path = "support/dbus.rs"]
mod dbus;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actlet::cm::fs::{CgroupVersion, Cgroupfs};
use actlet::cm::resources::NodeResources;
use actlet::cm::systemd::{SystemdCgroupfs, SystemdSlices};
use actlet::cm::{CgroupDriver, CmConfig, ContainerManager, NodeCapacity};
use actlet::pod_manager::PodManager;
use actlet::testing::PodBuilder;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

type Props = HashMap<String, OwnedValue>;

#[derive(Clone, Default)]
struct Seen {
    started: Arc<Mutex<Vec<(String, Props)>>>,
    set: Arc<Mutex<Vec<(String, Props)>>>,
    stopped: Arc<Mutex<Vec<String>>>,
}

struct FakeSystemd(Seen);

/// systemd's own error names.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.freedesktop.systemd1")]
enum SystemdError {
    #[zbus(error)]
    ZBus(zbus::Error),
    UnitExists(String),
}

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl FakeSystemd {
    fn start_transient_unit(
        &self,
        name: String,
        mode: String,
        properties: Vec<(String, OwnedValue)>,
        _aux: Vec<(String, Vec<(String, OwnedValue)>)>,
    ) -> Result<OwnedObjectPath, SystemdError> {
        assert_eq!(mode, "replace");
        let mut started = self.0.started.lock().unwrap();
        if started.iter().any(|(n, _)| *n == name) {
            return Err(SystemdError::UnitExists(format!(
                "Unit {name} was already loaded or has a fragment file."
            )));
        }
        started.push((name, properties.into_iter().collect()));
        Ok(OwnedObjectPath::try_from("/org/freedesktop/systemd1/job/1").unwrap())
    }

    fn set_unit_properties(&self, name: String, runtime: bool, properties: Vec<(String, OwnedValue)>) {
        assert!(runtime);
        self.0
            .set
            .lock()
            .unwrap()
            .push((name, properties.into_iter().collect()));
    }

    fn stop_unit(&self, name: String, mode: String) -> zbus::fdo::Result<OwnedObjectPath> {
        assert_eq!(mode, "replace");
        self.0.stopped.lock().unwrap().push(name);
        Ok(OwnedObjectPath::try_from("/org/freedesktop/systemd1/job/2").unwrap())
    }
}

fn u64_of(props: &Props, key: &str) -> Option<u64> {
    props.get(key).and_then(|v| u64::try_from(v.try_clone().ok()?).ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_are_transient_units_with_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bus) = dbus::start_bus(dir.path(), "cm_systemd") else {
        return;
    };
    let seen = Seen::default();
    let _systemd = zbus::connection::Builder::address(bus.address.as_str())
        .unwrap()
        .name("org.freedesktop.systemd1")
        .unwrap()
        .serve_at("/org/freedesktop/systemd1", FakeSystemd(seen.clone()))
        .unwrap()
        .build()
        .await
        .unwrap();

    // A fake cgroup v2 tree.
    let mount = dir.path().join("cgroup");
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::write(mount.join("cgroup.controllers"), "cpu memory pids").unwrap();
    let mut config = CmConfig {
        cgroup_mount: mount.clone(),
        systemd_bus: Some(bus.address.clone()),
        ..CmConfig::default()
    };
    config.naming.driver = CgroupDriver::Systemd;
    let slices = Arc::new(SystemdSlices::new(
        tokio::runtime::Handle::current(),
        config.systemd_bus.clone(),
    ));
    let fs = Arc::new(SystemdCgroupfs::new(
        Cgroupfs::new(&mount, CgroupVersion::V2),
        slices.clone(),
    ));
    let node = NodeCapacity {
        capacity: NodeResources {
            cpu_milli: 2000,
            memory: 4 << 30,
        },
        cpu_cfs_quota: true,
        ..Default::default()
    };
    let cm = ContainerManager::new(config.clone(), fs.clone(), None, PodManager::new(), node);
    assert!(cm.start().await, "the container manager is on");

    let started = seen.started.lock().unwrap().clone();
    let names: Vec<&str> = started.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "kubepods.slice",
            "kubepods-burstable.slice",
            "kubepods-besteffort.slice"
        ]
    );
    let kubepods = &started[0].1;
    assert_eq!(
        u64_of(kubepods, "MemoryMax"),
        Some(4 << 30),
        "node allocatable: {kubepods:?}"
    );
    let wants: Vec<String> = kubepods["Wants"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(wants, ["-.slice"]);
    for key in ["MemoryAccounting", "CPUAccounting", "TasksAccounting"] {
        assert!(bool::try_from(kubepods[key].try_clone().unwrap()).unwrap(), "{key}");
    }
    assert!(!bool::try_from(kubepods["DefaultDependencies"].try_clone().unwrap()).unwrap());
    let besteffort = &started[2].1;
    assert_eq!(u64_of(besteffort, "CPUWeight"), Some(1));
    let wants: Vec<String> = besteffort["Wants"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(wants, ["kubepods.slice"]);

    // A Burstable pod gets its own slice with its limits.
    let pod = PodBuilder::new("web")
        .uid("u-1")
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .requests("c", &[("cpu", "250m"), ("memory", "64Mi")])
        .limits("c", &[("cpu", "500m"), ("memory", "128Mi")])
        .build();
    cm.ensure_pod(&pod).await.unwrap();
    let started = seen.started.lock().unwrap().clone();
    let (name, props) = started.last().unwrap();
    assert_eq!(name, "kubepods-burstable-podu_1.slice");
    assert_eq!(u64_of(props, "MemoryMax"), Some(128 << 20));
    assert_eq!(u64_of(props, "CPUQuotaPerSecUSec"), Some(500_000));
    let wants: Vec<String> = props["Wants"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(wants, ["kubepods-burstable.slice"]);
    // The cgroupfs values are written too, as libcontainer does.
    let pod_dir = mount.join("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice");
    assert_eq!(
        std::fs::read_to_string(pod_dir.join("memory.max")).unwrap().trim(),
        "134217728"
    );

    // A later update (e.g. a resize) sets the slice's properties.
    cm.update_pod(&pod).await.unwrap();
    let set = seen.set.lock().unwrap().clone();
    let (name, props) = set.last().expect("SetUnitProperties");
    assert_eq!(name, "kubepods-burstable-podu_1.slice");
    assert_eq!(u64_of(props, "MemoryMax"), Some(128 << 20));

    // A restarted actlet: the units exist, so their properties are set.
    let again = ContainerManager::new(config, fs, None, PodManager::new(), node);
    assert!(again.start().await);
    let set = seen.set.lock().unwrap().clone();
    let kubepods = set
        .iter()
        .find(|(n, _)| n == "kubepods.slice")
        .expect("kubepods.slice updated");
    assert_eq!(u64_of(&kubepods.1, "MemoryMax"), Some(4 << 30));
    assert_eq!(
        seen.started.lock().unwrap().len(),
        4,
        "no second StartTransientUnit succeeded"
    );

    // The GC stops a pod slice before removing its directory.
    let s = slices.clone();
    tokio::task::spawn_blocking(move || s.stop_slice("kubepods-burstable-podu_1.slice"))
        .await
        .unwrap();
    assert_eq!(*seen.stopped.lock().unwrap(), ["kubepods-burstable-podu_1.slice"]);
}
