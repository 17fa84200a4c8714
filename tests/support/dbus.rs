//! A private `dbus-daemon` for tests that talk to systemd or logind fakes
//! (Debian package `dbus-daemon`; skipped loudly without it unless
//! `ACTLET_REQUIRE_DBUS=1`, which `.ci/run` sets).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A private bus; the daemon is stopped (by its PID) on drop.
pub struct Bus {
    daemon: Child,
    /// Its address (`unix:path=…`).
    pub address: String,
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// Starts a bus in `dir`; `None` (after a loud skip) without dbus-daemon.
pub fn start_bus(dir: &Path, test: &str) -> Option<Bus> {
    let socket = dir.join("bus");
    let config = dir.join("bus.conf");
    std::fs::write(
        &config,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
            socket.display()
        ),
    )
    .unwrap();
    let daemon = match Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .args(["--nofork", "--nopidfile"])
        .stdout(Stdio::null())
        .spawn()
    {
        Ok(d) => d,
        Err(e) if std::env::var("ACTLET_REQUIRE_DBUS").as_deref() == Ok("1") => {
            panic!("ACTLET_REQUIRE_DBUS=1 but dbus-daemon cannot run: {e}")
        }
        Err(e) => {
            let msg = format!("\n*** SKIPPED {test}: dbus-daemon cannot run ({e}); apt install dbus-daemon ***\n");
            let _ = std::io::stderr().write_all(msg.as_bytes());
            return None;
        }
    };
    let bus = Bus {
        daemon,
        address: format!("unix:path={}", socket.display()),
    };
    for _ in 0..500 {
        if socket.exists() {
            return Some(bus);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("dbus-daemon did not create {}", socket.display());
}
