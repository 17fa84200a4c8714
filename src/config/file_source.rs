//! [`FileSource`]: the `staticPodPath` source (upstream `sourceFile`).
//!
//! # Expected flow
//! 1. On start, every [`FileSourceConfig::check_frequency`] (20 s) and on
//!    inotify events — at once on the first event, then once more at the end
//!    of a [`FileSourceConfig::debounce`] window (100 ms) if more events came
//!    in it — the actor reads the whole path on the blocking pool
//!    ([`file_scan::scan`]); at most one read runs at a time, and a request
//!    during a read queues exactly one more.
//! 2. Each completed read becomes one [`SourceSnapshot`] (all pods of the
//!    path, and the manifests in error) sent to the recipient — unless the
//!    recipient has confirmed handling one with the same pods and errors
//!    ([`DeliveredSnapshot`]): an idle node's re-read of 10k manifests then
//!    costs the scan, not a merge of 10k pods.
//!
//! # Guarantees
//! - The actor thread never touches the file system.
//! - A manifest that breaks (parse, validation, read error) keeps its last
//!   good pods in the snapshot and is listed in `errors`, logged with
//!   `warn!(file, reason)` when the error first appears or changes
//!   ([`LastGoodManifests`], [`ManifestErrorLog`]); the last good pods
//!   survive a restart of the actor when the tree hands every instance the
//!   same [`SharedLastGood`] ([`FileSource::with_last_good`]).
//! - A path that does not exist gives an empty snapshot (upstream: the
//!   source is seen, its pods are removed), logged once per disappearance.
//!   A path that exists but cannot be listed sends nothing: the previous
//!   snapshot stands.
//!
//! # Caveats
//! inotify is a hint, not the source of truth: if the watch cannot be set
//! up (no directory yet, inotify limits), that is logged once and the
//! periodic read carries on; every read retries the watch, and a directory
//! that was deleted or replaced is watched again.

use std::path::PathBuf;
use std::time::Duration;

use crate::actors::supervisor::SupervisedRecipient;
use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, SpawnHandle, WeakAddr, WrapFuture};

use crate::config::delivered::DeliveredSnapshot;
use crate::config::error_log::ManifestErrorLog;
use crate::config::file_scan::{self, ScanCache, ScanOutcome};
use crate::config::file_watch::{DirWatch, WatchTarget, start_watch};
#[cfg(doc)]
use crate::config::last_good::LastGoodManifests;
use crate::config::last_good::SharedLastGood;
use crate::messages::pod_update::{PodSource, SourceSnapshot};

/// Settings of a [`FileSource`].
#[derive(Clone, Debug)]
pub struct FileSourceConfig {
    /// `staticPodPath`: a directory of manifests, or one manifest file.
    pub path: PathBuf,
    /// This node's name (static pod names get `-<nodeName>`).
    pub node_name: String,
    /// `fileCheckFrequency`: the periodic full re-read.
    pub check_frequency: Duration,
    /// Also re-read on inotify events.
    pub watch: bool,
    /// After the read on a first inotify event, further events for this long
    /// are coalesced into one more read at its end.
    pub debounce: Duration,
}

impl FileSourceConfig {
    /// Upstream's default `fileCheckFrequency`.
    pub const DEFAULT_CHECK_FREQUENCY: Duration = Duration::from_secs(20);
    /// Default inotify debounce.
    pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

    /// Defaults: 20 s period, inotify on, 100 ms debounce.
    pub fn new(path: impl Into<PathBuf>, node_name: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            node_name: node_name.into(),
            check_frequency: Self::DEFAULT_CHECK_FREQUENCY,
            watch: true,
            debounce: Self::DEFAULT_DEBOUNCE,
        }
    }
}

/// The file source actor; see the module doc.
pub struct FileSource {
    config: FileSourceConfig,
    out: SupervisedRecipient<SourceSnapshot>,
    /// Owned: outlives the instance when given by [`Self::with_last_good`].
    last_good: SharedLastGood,
    /// What each file gave at the last read (taken by the read in flight).
    scan_cache: Option<ScanCache>,
    error_log: ManifestErrorLog,
    watch: Option<DirWatch>,
    watch_error_logged: bool,
    missing_logged: bool,
    scanning: bool,
    rescan: bool,
    debounce: Option<SpawnHandle>,
    changed_in_window: bool,
    /// What the recipient handled (a restart sends the first read again).
    delivered: DeliveredSnapshot,
}

impl FileSource {
    /// A source reading `config.path` and sending snapshots to `out`.
    pub fn new(config: FileSourceConfig, out: impl Into<SupervisedRecipient<SourceSnapshot>>) -> Self {
        Self {
            config,
            out: out.into(),
            last_good: SharedLastGood::default(),
            scan_cache: Some(ScanCache::default()),
            error_log: ManifestErrorLog::new(),
            watch: None,
            watch_error_logged: false,
            missing_logged: false,
            scanning: false,
            rescan: false,
            debounce: None,
            changed_in_window: false,
            delivered: DeliveredSnapshot::default(),
        }
    }

    /// Keeps the last good pods of broken manifests in `last_good`, shared
    /// with the instances before and after this one (a restart must not
    /// remove the pod of a manifest that broke).
    pub fn with_last_good(mut self, last_good: SharedLastGood) -> Self {
        self.last_good = last_good;
        self
    }

    /// Starts a read now, or queues one after the read in flight.
    fn request_scan(&mut self, ctx: &mut Context<Self>) {
        if self.scanning {
            self.rescan = true;
            return;
        }
        self.scanning = true;
        let path = self.config.path.clone();
        let node_name = self.config.node_name.clone();
        let watch = self
            .config
            .watch
            .then(|| (self.watch.as_ref().map(|w| w.target.clone()), ctx.address().downgrade()));
        let mut cache = self.scan_cache.take().unwrap_or_default();
        let read = tokio::task::spawn_blocking(move || {
            // Watch before reading, so no change after the read is missed.
            let watch = watch.map(|(current, addr)| refresh_watch(&path, current, addr));
            let outcome = file_scan::scan_cached(&path, &node_name, &mut cache);
            (watch, outcome, cache)
        });
        ctx.spawn(read.into_actor(self).map(|joined, act, ctx| {
            act.scanning = false;
            match joined {
                Ok((watch, outcome, cache)) => {
                    if let Some(watch) = watch {
                        act.apply_watch(watch);
                    }
                    match outcome {
                        ScanOutcome::Unchanged if act.delivered.is_settled() => {
                            // The same files, unchanged, as the read whose
                            // snapshot the pod config handled: nothing to build.
                            tracing::trace!("static pod path unchanged since the last delivered read");
                        }
                        ScanOutcome::Unchanged => act.apply_scan(ScanOutcome::Read(cache.reads()), ctx),
                        outcome => act.apply_scan(outcome, ctx),
                    }
                    act.scan_cache = Some(cache);
                }
                Err(e) => tracing::error!(error = %e, "static pod path read task failed"),
            }
            if std::mem::take(&mut act.rescan) {
                act.request_scan(ctx);
            }
        }));
    }

    fn apply_watch(&mut self, change: WatchChange) {
        match change {
            WatchChange::Keep => {}
            WatchChange::Gone => self.watch = None,
            WatchChange::Started(watch) => {
                tracing::debug!(dir = %watch.target.dir.display(), "watching static pod path");
                self.watch = Some(watch);
                self.watch_error_logged = false;
            }
            WatchChange::Failed(reason) => {
                self.watch = None;
                if !std::mem::replace(&mut self.watch_error_logged, true) {
                    tracing::warn!(path = %self.config.path.display(), reason, "cannot watch static pod path; relying on the periodic re-read");
                }
            }
        }
    }

    fn apply_scan(&mut self, outcome: ScanOutcome, ctx: &mut Context<Self>) {
        let path = self.config.path.display();
        let snapshot = match outcome {
            ScanOutcome::Read(reads) => {
                self.missing_logged = false;
                self.last_good.snapshot(PodSource::File, reads)
            }
            ScanOutcome::Missing => {
                if !std::mem::replace(&mut self.missing_logged, true) {
                    tracing::warn!(path = %path, "static pod path does not exist; no file pods");
                }
                self.last_good.clear();
                SourceSnapshot {
                    source: PodSource::File,
                    pods: vec![],
                    errors: vec![],
                }
            }
            ScanOutcome::Failed(reason) => {
                tracing::warn!(path = %path, reason, "cannot read static pod path; keeping the last read");
                return;
            }
            // Turned into the cache's reads by the caller.
            ScanOutcome::Unchanged => return,
        };
        self.error_log.update(&PodSource::File, &snapshot.errors);
        if self.delivered.is_handled(&snapshot) {
            tracing::trace!(
                pods = snapshot.pods.len(),
                "static pod path unchanged; snapshot not sent again"
            );
            return;
        }
        let seq = self.delivered.sending(&snapshot);
        // Bounded: an answer later than the next re-read is not waited for
        // (that re-read sends again; a snapshot is a SET, handling it twice
        // changes nothing).
        let sent = tokio::time::timeout(self.config.check_frequency, self.out.send(snapshot));
        ctx.spawn(sent.into_actor(self).map(move |answer, act, _| match answer {
            Ok(Ok(())) => act.delivered.handled(seq),
            Ok(Err(e)) => {
                act.delivered.lost();
                tracing::warn!(error = %e, "cannot deliver file source snapshot; the next re-read retries");
            }
            Err(_) => {
                act.delivered.lost();
                tracing::warn!(
                    "the pod config did not handle the file source snapshot in time; the next re-read sends it again"
                );
            }
        }));
    }
}

impl Actor for FileSource {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.request_scan(ctx);
        ctx.run_interval(self.config.check_frequency, |act, ctx| act.request_scan(ctx));
    }
}

/// notify → actor: something changed in the watched directory.
#[derive(Message)]
#[rtype(result = "()")]
struct FsChanged {
    /// The watched directory itself went away.
    lost: bool,
}

impl Handler<FsChanged> for FileSource {
    type Result = ();

    fn handle(&mut self, msg: FsChanged, ctx: &mut Self::Context) {
        if msg.lost {
            self.watch = None;
        }
        if self.debounce.is_some() {
            // Inside the window: one trailing read when it closes.
            self.changed_in_window = true;
            return;
        }
        // Leading edge: read at once (a new manifest is picked up with no
        // added latency), then coalesce the rest of the burst.
        self.request_scan(ctx);
        self.debounce = Some(ctx.run_later(self.config.debounce, |act, ctx| {
            act.debounce = None;
            if std::mem::take(&mut act.changed_in_window) {
                act.request_scan(ctx);
            }
        }));
    }
}

/// What a read did to the watch.
enum WatchChange {
    Keep,
    Gone,
    Started(DirWatch),
    Failed(String),
}

/// Watches the directory for `path` unless `current` already does (blocking).
fn refresh_watch(path: &std::path::Path, current: Option<WatchTarget>, addr: WeakAddr<FileSource>) -> WatchChange {
    let Some(target) = WatchTarget::for_path(path) else {
        return WatchChange::Gone;
    };
    if current.as_ref() == Some(&target) {
        return WatchChange::Keep;
    }
    let on_change = move |lost| {
        if let Some(addr) = addr.upgrade() {
            addr.do_send(FsChanged { lost });
        }
    };
    match start_watch(target, on_change) {
        Ok(watch) => WatchChange::Started(watch),
        Err(e) => WatchChange::Failed(e.to_string()),
    }
}
