//! systemd-logind over D-Bus, as upstream's node shutdown manager uses it
//! (`pkg/kubelet/nodeshutdown/systemd`): a *delay* inhibitor lock on
//! shutdown, so the machine waits for the pods; `PrepareForShutdown(true)`
//! starts the graceful shutdown, `false` cancels it; the lock is released
//! once every group is done. When logind's `InhibitDelayMaxUSec` is shorter
//! than the grace period, the drop-in `99-kubelet.conf` raises it and logind
//! is reloaded, as upstream does.
//!
//! Built on `zbus` (pure Rust D-Bus, tokio backend): no libdbus, no C.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use zbus::zvariant::OwnedFd;

/// logind's drop-in directory.
pub const LOGIND_CONF_DIR: &str = "/etc/systemd/logind.conf.d";
/// The drop-in actlet writes (upstream's name).
pub const KUBELET_LOGIND_CONF: &str = "99-kubelet.conf";
/// How long logind is given to reload its configuration (upstream: 1 s).
pub const RELOAD_WAIT: Duration = Duration::from_secs(1);
/// Every D-Bus call's deadline.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Which logind to talk to (`KubeletConfig::shutdown.logind`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogindTarget {
    /// A D-Bus address (`unix:path=…`); `None`: the system bus.
    pub address: Option<String>,
    /// Where the `InhibitDelayMaxSec` drop-in goes.
    pub conf_dir: PathBuf,
}

impl LogindTarget {
    /// The host's logind on the system bus (what the daemon uses).
    ///
    /// ```
    /// let t = actlet::nodeshutdown::logind::LogindTarget::system();
    /// assert!(t.address.is_none());
    /// assert_eq!(t.conf_dir, std::path::Path::new("/etc/systemd/logind.conf.d"));
    /// ```
    pub fn system() -> Self {
        Self {
            address: None,
            conf_dir: PathBuf::from(LOGIND_CONF_DIR),
        }
    }
}

/// The delay inhibitor lock, while held (owned outside the manager actor:
/// a manager rebuilt mid-shutdown must not release it early). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct InhibitLock(std::sync::Arc<std::sync::Mutex<Option<OwnedFd>>>);

impl InhibitLock {
    /// Whether a lock is held.
    pub fn held(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Keeps `fd` (the lock) until [`InhibitLock::release`].
    pub fn hold(&self, fd: OwnedFd) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(fd);
    }

    /// Closes the lock's descriptor: logind lets the shutdown go on.
    /// Returns whether one was held.
    pub fn release(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take().is_some()
    }
}

/// A logind D-Bus call failed.
#[derive(Debug, thiserror::Error)]
pub enum LogindError {
    /// The bus or logind could not be reached, or a call failed.
    #[error("systemd-logind over D-Bus ({bus}): {what}: {source}")]
    Bus {
        /// The bus address (or "system bus").
        bus: String,
        /// What was attempted.
        what: &'static str,
        /// The cause.
        #[source]
        source: zbus::Error,
    },
    /// A call took longer than [`CALL_TIMEOUT`].
    #[error("systemd-logind over D-Bus ({bus}): {what}: no answer within {CALL_TIMEOUT:?}")]
    Timeout {
        /// The bus address (or "system bus").
        bus: String,
        /// What was attempted.
        what: &'static str,
    },
    /// The drop-in could not be written.
    #[error("cannot write {path}: {source}")]
    DropIn {
        /// The drop-in file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// logind kept a maximum delay below the grace period.
    #[error(
        "node shutdown manager was unable to update logind InhibitDelayMaxSec to {requested:?} (ShutdownGracePeriod), current value of InhibitDelayMaxSec ({current:?}) is less than requested ShutdownGracePeriod"
    )]
    DelayTooShort {
        /// The grace period asked for.
        requested: Duration,
        /// logind's maximum after the reload.
        current: Duration,
    },
}

#[zbus::proxy(
    interface = "org.freedesktop.login1.Manager",
    default_service = "org.freedesktop.login1",
    default_path = "/org/freedesktop/login1"
)]
trait Login1Manager {
    /// Takes an inhibitor lock; the returned descriptor holds it.
    fn inhibit(&self, what: &str, who: &str, why: &str, mode: &str) -> zbus::Result<OwnedFd>;

    /// The longest a delay lock may hold a shutdown back, in µs.
    #[zbus(property, name = "InhibitDelayMaxUSec")]
    fn inhibit_delay_max_usec(&self) -> zbus::Result<u64>;

    /// Sent with `true` before a shutdown, `false` when it was cancelled.
    #[zbus(signal)]
    fn prepare_for_shutdown(&self, start: bool) -> zbus::Result<()>;
}

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1"
)]
trait Systemd1Manager {
    /// Sends `signal` to the unit's processes.
    fn kill_unit(&self, name: &str, who: &str, signal: i32) -> zbus::Result<()>;
}

/// The drop-in that raises logind's `InhibitDelayMaxSec` to `delay`
/// (upstream's text).
///
/// ```
/// let text = actlet::nodeshutdown::logind::inhibit_delay_dropin(std::time::Duration::from_secs(30));
/// assert_eq!(text, "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n");
/// ```
pub fn inhibit_delay_dropin(delay: Duration) -> String {
    format!(
        "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec={:.0}\n",
        delay.as_secs_f64()
    )
}

/// A connection to logind.
#[derive(Clone, Debug)]
pub struct Logind {
    bus: String,
    manager: Login1ManagerProxy<'static>,
    systemd: Systemd1ManagerProxy<'static>,
}

async fn deadline<T>(
    bus: &str,
    what: &'static str,
    call: impl std::future::Future<Output = zbus::Result<T>>,
) -> Result<T, LogindError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(r) => r.map_err(|source| LogindError::Bus {
            bus: bus.to_string(),
            what,
            source,
        }),
        Err(_) => Err(LogindError::Timeout {
            bus: bus.to_string(),
            what,
        }),
    }
}

impl Logind {
    /// Connects to `target`'s bus.
    ///
    /// # Errors
    /// The bus cannot be reached.
    pub async fn connect(target: &LogindTarget) -> Result<Self, LogindError> {
        let bus = target.address.clone().unwrap_or_else(|| "system bus".to_string());
        let conn = match &target.address {
            None => deadline(&bus, "connect", zbus::Connection::system()).await?,
            Some(addr) => {
                let builder = zbus::connection::Builder::address(addr.as_str()).map_err(|source| LogindError::Bus {
                    bus: bus.clone(),
                    what: "parse the address",
                    source,
                })?;
                deadline(&bus, "connect", builder.build()).await?
            }
        };
        // Properties read fresh: a cached value would miss a reload.
        let manager = Login1ManagerProxy::builder(&conn).cache_properties(zbus::proxy::CacheProperties::No);
        let manager = deadline(&bus, "logind proxy", manager.build()).await?;
        let systemd = deadline(&bus, "systemd proxy", Systemd1ManagerProxy::new(&conn)).await?;
        Ok(Self { bus, manager, systemd })
    }

    /// logind's `InhibitDelayMaxUSec`.
    ///
    /// # Errors
    /// The property cannot be read.
    pub async fn inhibit_delay_max(&self) -> Result<Duration, LogindError> {
        let usec = deadline(
            &self.bus,
            "read InhibitDelayMaxUSec",
            self.manager.inhibit_delay_max_usec(),
        )
        .await?;
        Ok(Duration::from_micros(usec))
    }

    /// Takes the delay lock on shutdown (upstream's who/why); it holds
    /// until the returned descriptor is closed.
    ///
    /// # Errors
    /// logind refused or could not be asked.
    pub async fn inhibit_shutdown(&self) -> Result<OwnedFd, LogindError> {
        deadline(
            &self.bus,
            "Inhibit",
            self.manager.inhibit(
                "shutdown",
                "kubelet",
                "Kubelet needs time for critical node shutdown",
                "delay",
            ),
        )
        .await
    }

    /// Makes sure logind lets a delay lock hold for `requested`: writes the
    /// drop-in into `conf_dir`, reloads logind (SIGHUP through systemd, as
    /// upstream) and reads the maximum again.
    ///
    /// # Errors
    /// The drop-in cannot be written, logind cannot be reloaded, or it
    /// still allows less than `requested`.
    pub async fn ensure_inhibit_delay(&self, requested: Duration, conf_dir: &Path) -> Result<(), LogindError> {
        let current = self.inhibit_delay_max().await?;
        if requested <= current {
            return Ok(());
        }
        let path = conf_dir.join(KUBELET_LOGIND_CONF);
        let text = inhibit_delay_dropin(requested);
        let write = async {
            tokio::fs::create_dir_all(conf_dir).await?;
            tokio::fs::write(&path, text).await
        };
        write.await.map_err(|source| LogindError::DropIn {
            path: path.clone(),
            source,
        })?;
        tracing::info!(path = %path.display(), ?requested, ?current, "raised logind's InhibitDelayMaxSec; reloading logind");
        deadline(
            &self.bus,
            "reload logind (KillUnit SIGHUP)",
            self.systemd
                .kill_unit("systemd-logind.service", "all", nix::libc::SIGHUP),
        )
        .await?;
        tokio::time::sleep(RELOAD_WAIT).await;
        let current = self.inhibit_delay_max().await?;
        if requested > current {
            return Err(LogindError::DelayTooShort { requested, current });
        }
        Ok(())
    }

    /// `PrepareForShutdown` as a stream of `true` (shutting down) and
    /// `false` (cancelled); it ends when the connection does.
    ///
    /// # Errors
    /// The subscription failed.
    pub async fn shutdown_events(&self) -> Result<futures::stream::BoxStream<'static, bool>, LogindError> {
        let signals = deadline(
            &self.bus,
            "subscribe to PrepareForShutdown",
            self.manager.receive_prepare_for_shutdown(),
        )
        .await?;
        Ok(signals
            .filter_map(|s| async move {
                match s.args() {
                    Ok(a) => Some(a.start),
                    Err(e) => {
                        tracing::warn!(error = %e, "malformed PrepareForShutdown signal ignored");
                        None
                    }
                }
            })
            .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropin_rounds_to_whole_seconds_as_upstream() {
        assert!(inhibit_delay_dropin(Duration::from_millis(90_400)).contains("InhibitDelayMaxSec=90\n"));
        assert!(inhibit_delay_dropin(Duration::from_secs(600)).ends_with("InhibitDelayMaxSec=600\n"));
    }

    #[tokio::test]
    async fn an_unreachable_bus_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = LogindTarget {
            address: Some(format!("unix:path={}/none", dir.path().display())),
            conf_dir: dir.path().into(),
        };
        let e = Logind::connect(&target).await.unwrap_err();
        assert!(e.to_string().contains("/none"), "{e}");
    }
}
