//! [`OomWatcher`]: the `oom-watcher` actor (upstream `oomwatcher.realWatcher`).
//! Every second it reads the kernel log records that arrived since the last
//! read from `/dev/kmsg` (opened non-blocking, read on the blocking pool),
//! reassembles OOM kills ([`super::oom_parser`]) and records a `SystemOOM`
//! Warning event on the node for each system-wide one, as upstream does.
//! A kill inside a container's memory limit is logged; its container's
//! `OOMKilled` reason comes from the runtime's `ContainerStatus`.
//!
//! State: the last record read and the partial kill being reassembled live
//! in [`OomState`] (owned by the tree assembly), so a restarted watcher
//! neither reports a kill twice nor misses one; the open file is derived
//! (reopened in `started`). When `/dev/kmsg` cannot be read (no privilege,
//! a container) one log line says so and the watcher idles.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::oom_parser::{OomInstance, OomParser, parse_chunk};
use crate::events::{EventRecorder, node_ref};
use crate::messages::event::EventType;

/// How often new records are read.
pub const READ_PERIOD: Duration = Duration::from_secs(1);
/// Upstream's event reason.
pub const SYSTEM_OOM: &str = "SystemOOM";
/// At most this many records per read (a flood waits for the next tick).
const MAX_RECORDS_PER_READ: usize = 10_000;

#[derive(Debug, Default)]
struct Progress {
    /// Sequence number of the last record handled; `None` before the first read.
    last_seq: Option<u64>,
    parser: OomParser,
}

/// What outlives the watcher's restarts.
#[derive(Clone, Debug, Default)]
pub struct OomState(Arc<Mutex<Progress>>);

/// The kernel log, opened non-blocking.
#[derive(Debug)]
pub struct Kmsg {
    file: std::fs::File,
}

impl Kmsg {
    /// Opens `path`; on the first open ever (`state` has read nothing) the
    /// history is skipped: only kills from now on are reported.
    pub fn open(path: &std::path::Path, state: &OomState) -> std::io::Result<Self> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(path)?;
        let fresh = state.0.lock().unwrap_or_else(|e| e.into_inner()).last_seq.is_none();
        if fresh {
            file.seek(SeekFrom::End(0))?;
        }
        Ok(Self { file })
    }

    /// Reads what is available and returns the kills it completes
    /// (blocking only for the reads themselves, which never wait).
    pub fn read_kills(&mut self, state: &OomState) -> std::io::Result<Vec<OomInstance>> {
        let mut buf = vec![0u8; 16 * 1024];
        let mut chunks = String::new();
        for _ in 0..MAX_RECORDS_PER_READ {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => chunks.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // records were overwritten before we read them: go on with the next
                Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let mut progress = state.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = vec![];
        for rec in parse_chunk(&chunks) {
            if progress.last_seq.is_some_and(|s| rec.seq <= s) {
                continue;
            }
            progress.last_seq = Some(rec.seq);
            if let Some(kill) = progress.parser.feed(&rec) {
                out.push(kill);
            }
        }
        if progress.last_seq.is_none() {
            progress.last_seq = Some(0);
        }
        Ok(out)
    }
}

/// What the watcher works with.
#[derive(Clone, Debug)]
pub struct OomWatcherDeps {
    /// `/dev/kmsg`.
    pub path: PathBuf,
    /// State outliving the actor.
    pub state: OomState,
    /// Node events.
    pub events: EventRecorder,
    /// The node's name.
    pub node_name: String,
    /// Read period.
    pub period: Duration,
}

/// Records the events for `kills` (upstream: `SystemOOM` for system OOMs only).
pub fn record(kills: &[OomInstance], events: &EventRecorder, node_name: &str) {
    for k in kills {
        if k.is_system_oom() {
            let mut message = "System OOM encountered".to_string();
            if !k.process_name.is_empty() && k.pid != 0 {
                message = format!("{message}, victim process: {}, pid: {}", k.process_name, k.pid);
            }
            tracing::warn!(pid = k.pid, process = %k.process_name, "system OOM");
            events.event(node_ref(node_name), EventType::Warning, SYSTEM_OOM, message);
        } else {
            tracing::info!(
                pid = k.pid,
                process = %k.process_name,
                cgroup = %k.container_name,
                limit_of = %k.victim_container_name,
                "OOM kill inside a cgroup limit"
            );
        }
    }
}

/// The `oom-watcher` actor.
pub struct OomWatcher {
    deps: OomWatcherDeps,
    kmsg: Option<Arc<Mutex<Kmsg>>>,
    reading: bool,
}

impl OomWatcher {
    /// A watcher with `deps`.
    pub fn new(deps: OomWatcherDeps) -> Self {
        Self {
            deps,
            kmsg: None,
            reading: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let Some(kmsg) = self.kmsg.clone() else { return };
        if self.reading {
            return;
        }
        self.reading = true;
        let state = self.deps.state.clone();
        let read =
            tokio::task::spawn_blocking(move || kmsg.lock().unwrap_or_else(|e| e.into_inner()).read_kills(&state));
        ctx.spawn(read.into_actor(self).map(|res, act, _| {
            act.reading = false;
            match res {
                Ok(Ok(kills)) => record(&kills, &act.deps.events, &act.deps.node_name),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, path = %act.deps.path.display(), "reading the kernel log failed; OOM watcher stops");
                    act.kmsg = None;
                }
                Err(e) => tracing::warn!(error = %e, "kernel log read task failed"),
            }
        }));
    }
}

impl Actor for OomWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        match Kmsg::open(&self.deps.path, &self.deps.state) {
            Ok(k) => {
                tracing::debug!(path = %self.deps.path.display(), "OOM watcher reading the kernel log");
                self.kmsg = Some(Arc::new(Mutex::new(k)));
                ctx.run_interval(self.deps.period, |act, ctx| act.tick(ctx));
            }
            Err(e) => tracing::info!(
                path = %self.deps.path.display(),
                error = %e,
                "OOM watcher off: the kernel log is not readable, no SystemOOM events"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::actors::supervisor::SupervisedRecipient;
    use crate::messages::event::RecordEvent;

    const SYSTEM_OOM_LINES: &str = "\
4,9001,7200000000,-;stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0
6,9030,7200000200,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=stress,pid=4501,uid=1000
3,9031,7200000210,-;Out of memory: Killed process 4501 (stress) total-vm:8392704kB, anon-rss:7861248kB
";
    const MEMCG_LINES: &str = "\
4,9100,7300000000,-;dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=984
6,9101,7300000010,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c1,mems_allowed=0,oom_memcg=/kubepods/burstable/podu1/c1,task_memcg=/kubepods/burstable/podu1/c1,task=dd,pid=77,uid=0
3,9102,7300000020,-;Memory cgroup out of memory: Killed process 77 (dd) total-vm:70712kB
";

    #[test]
    fn history_is_skipped_new_kills_reported_once_across_restarts() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("kmsg");
        std::fs::write(&path, SYSTEM_OOM_LINES).unwrap(); // before the kubelet started
        let state = OomState::default();
        let mut k = Kmsg::open(&path, &state).unwrap();
        assert!(k.read_kills(&state).unwrap().is_empty(), "history skipped");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(MEMCG_LINES.as_bytes()).unwrap();
        f.write_all(
            SYSTEM_OOM_LINES
                .replace("9001", "9201")
                .replace("9030", "9230")
                .replace("9031", "9231")
                .as_bytes(),
        )
        .unwrap();
        let kills = k.read_kills(&state).unwrap();
        assert_eq!(kills.iter().map(|k| k.pid).collect::<Vec<_>>(), [77, 4501]);
        // a restarted watcher reopens from the start and skips what was handled
        let mut again = Kmsg::open(&path, &state).unwrap();
        assert!(again.read_kills(&state).unwrap().is_empty());
    }

    #[test]
    fn only_system_ooms_become_node_events() {
        let seen = Arc::new(Mutex::new(Vec::<RecordEvent>::new()));
        let sink = seen.clone();
        let events = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
            sink.lock().unwrap_or_else(|e| e.into_inner()).push(e)
        }));
        let mut p = OomParser::default();
        let kills: Vec<_> = parse_chunk(&format!("{MEMCG_LINES}{SYSTEM_OOM_LINES}"))
            .iter()
            .filter_map(|r| p.feed(r))
            .collect();
        record(&kills, &events, "node-a");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(
            (seen[0].type_, seen[0].reason.as_str()),
            (EventType::Warning, "SystemOOM")
        );
        assert_eq!(
            seen[0].message,
            "System OOM encountered, victim process: stress, pid: 4501"
        );
        assert_eq!(seen[0].involved.kind.as_deref(), Some("Node"));
        assert_eq!(seen[0].involved.name.as_deref(), Some("node-a"));
    }
}
