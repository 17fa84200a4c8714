//! Graceful node shutdown driven by systemd-logind over D-Bus (issue #14),
//! against a fake logind (and systemd) served with zbus on a private
//! `dbus-daemon`, on real time:
//! - at start the node raises logind's `InhibitDelayMaxSec` through the
//!   `99-kubelet.conf` drop-in and a reload (logind's own maximum, 1 s, is
//!   below the 4 s grace period), then takes a *delay* inhibitor lock on
//!   shutdown with upstream's who/why;
//! - `PrepareForShutdown(true)` terminates the pods by priority, each
//!   `Failed`/`Terminated`, and the lock is released only once every group
//!   is done;
//! - `PrepareForShutdown(false)` (cancelled) takes the lock again and the
//!   node admits pods again.
//!
//! Needs `dbus-daemon` (Debian package `dbus-daemon`, installed by `.ci/run`);
//! skipped loudly without it unless `ACTLET_REQUIRE_DBUS=1`.

#[path = "support/dbus.rs"]
mod dbus;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::nodeshutdown::ShutdownConfig;
use actlet::nodeshutdown::logind::LogindTarget;
use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedFd;

/// What the fake logind saw and holds.
#[derive(Clone, Default)]
struct Seen {
    /// Inhibit calls: (what, who, why, mode).
    inhibits: Arc<Mutex<Vec<[String; 4]>>>,
    /// Our ends of the locks handed out.
    locks: Arc<Mutex<Vec<UnixStream>>>,
    /// `InhibitDelayMaxUSec`.
    delay_usec: Arc<AtomicU64>,
    /// KillUnit calls: (unit, who, signal).
    kills: Arc<Mutex<Vec<(String, String, i32)>>>,
}

impl Seen {
    /// Whether the lock handed out last is still held by its receiver.
    fn last_lock_held(&self) -> bool {
        let locks = self.locks.lock().unwrap();
        let Some(ours) = locks.last() else { return false };
        ours.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 1];
        match (&*ours).read(&mut buf) {
            Ok(0) => false, // every copy of the other end is closed
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
            Err(e) => panic!("{e}"),
        }
    }
}

struct FakeLogind(Seen);

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl FakeLogind {
    fn inhibit(&self, what: String, who: String, why: String, mode: String) -> zbus::fdo::Result<OwnedFd> {
        self.0.inhibits.lock().unwrap().push([what, who, why, mode]);
        let (ours, theirs) = UnixStream::pair().map_err(|e| zbus::fdo::Error::IOError(e.to_string()))?;
        self.0.locks.lock().unwrap().push(ours);
        Ok(OwnedFd::from(std::os::fd::OwnedFd::from(theirs)))
    }

    #[zbus(property, name = "InhibitDelayMaxUSec")]
    fn inhibit_delay_max_usec(&self) -> u64 {
        self.0.delay_usec.load(Ordering::SeqCst)
    }

    #[zbus(signal)]
    async fn prepare_for_shutdown(emitter: &SignalEmitter<'_>, start: bool) -> zbus::Result<()>;
}

/// systemd, as far as a logind reload goes: SIGHUP to logind makes it read
/// the drop-in directory again.
struct FakeSystemd(Seen, PathBuf);

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl FakeSystemd {
    fn kill_unit(&self, name: String, who: String, signal: i32) {
        self.0.kills.lock().unwrap().push((name, who, signal));
        let conf = std::fs::read_to_string(self.1.join("99-kubelet.conf")).unwrap_or_default();
        let secs = conf
            .lines()
            .find_map(|l| l.strip_prefix("InhibitDelayMaxSec="))
            .and_then(|v| v.trim().parse::<u64>().ok());
        if let Some(secs) = secs {
            self.0.delay_usec.store(secs * 1_000_000, Ordering::SeqCst);
        }
    }
}

fn pod(name: &str, priority: i32) -> k8s_openapi::api::core::v1::Pod {
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .modify(move |p| p.spec.as_mut().unwrap().priority = Some(priority))
        .build()
}

fn terminated(node: &TestNode, name: &str) -> bool {
    node.status("default", name)
        .is_some_and(|s| s.phase.as_deref() == Some("Failed") && s.reason.as_deref() == Some("Terminated"))
}

#[test]
fn logind_drives_graceful_shutdown_and_holds_the_delay_lock_until_pods_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bus) = dbus::start_bus(dir.path(), "nodeshutdown_logind") else {
        return;
    };
    let conf_dir = dir.path().join("logind.conf.d");
    TestSystem::real_time().block_on(async move {
        let seen = Seen::default();
        seen.delay_usec.store(1_000_000, Ordering::SeqCst);
        let logind = zbus::connection::Builder::address(bus.address.as_str())
            .unwrap()
            .name("org.freedesktop.login1")
            .unwrap()
            .name("org.freedesktop.systemd1")
            .unwrap()
            .serve_at("/org/freedesktop/login1", FakeLogind(seen.clone()))
            .unwrap()
            .serve_at("/org/freedesktop/systemd1", FakeSystemd(seen.clone(), conf_dir.clone()))
            .unwrap()
            .build()
            .await
            .unwrap();

        let target = LogindTarget {
            address: Some(bus.address.clone()),
            conf_dir: conf_dir.clone(),
        };
        let node = TestNode::builder()
            .customize(move |b| {
                b.configure(move |c| {
                    c.shutdown = ShutdownConfig::new(Duration::from_secs(4), Duration::from_secs(2), vec![]);
                    c.shutdown.logind = Some(target.clone());
                })
            })
            .start();
        node.set_pods(vec![pod("web", 0), pod("critical", 2_000_000_000)]);
        for name in ["web", "critical"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(30))
                .await
                .unwrap();
        }

        // At start: logind's maximum raised to the grace period, then the lock.
        let s = seen.clone();
        wait_until(|| !s.inhibits.lock().unwrap().is_empty(), Duration::from_secs(20))
            .await
            .expect("an inhibitor lock is taken");
        assert_eq!(
            std::fs::read_to_string(conf_dir.join("99-kubelet.conf")).unwrap(),
            "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=4\n"
        );
        assert_eq!(
            *seen.kills.lock().unwrap(),
            [("systemd-logind.service".to_string(), "all".to_string(), 1)],
            "logind reloaded with SIGHUP"
        );
        assert_eq!(
            seen.inhibits.lock().unwrap()[0],
            [
                "shutdown",
                "kubelet",
                "Kubelet needs time for critical node shutdown",
                "delay"
            ]
            .map(String::from)
        );
        assert!(seen.last_lock_held(), "the lock is held while the node runs");

        // The machine is going down.
        let iface = logind
            .object_server()
            .interface::<_, FakeLogind>("/org/freedesktop/login1")
            .await
            .unwrap();
        FakeLogind::prepare_for_shutdown(iface.signal_emitter(), true)
            .await
            .unwrap();
        let n = &node;
        wait_until(|| terminated(n, "web"), Duration::from_secs(20))
            .await
            .expect("the regular pod is terminated");
        assert!(
            seen.last_lock_held(),
            "the lock still holds the machine while the critical group terminates"
        );
        wait_until(|| terminated(n, "critical"), Duration::from_secs(20))
            .await
            .expect("then the critical one");
        let s = seen.clone();
        wait_until(|| !s.last_lock_held(), Duration::from_secs(20))
            .await
            .expect("the lock is released once every group is done");
        assert!(node.kubelet().node_shutdown.shutting_down());

        // Cancelled: the lock is taken again, the node admits pods again.
        FakeLogind::prepare_for_shutdown(iface.signal_emitter(), false)
            .await
            .unwrap();
        let s = seen.clone();
        wait_until(
            || s.inhibits.lock().unwrap().len() == 2 && s.last_lock_held(),
            Duration::from_secs(20),
        )
        .await
        .expect("a new lock after the cancellation");
        assert!(!node.kubelet().node_shutdown.shutting_down());
        drop(node);
    });
}
