//! The actors of actlet. Each actor owns one piece of state and is a thin
//! shell around pure logic kept in plain modules.
//!
//! # The state-ownership rule
//!
//! **State that must survive an actor's restart lives outside the actor
//! instance.** A supervisor rebuilds a failed actor from its factory with
//! fresh fields, so every field of an actor is one of two kinds, and its
//! module doc says which:
//! - *derived*: rebuilt in `started` from shared handles, the runtime or the
//!   API (caches of what the world looks like, timers, in-flight work);
//! - *owned*: must not be lost, so it lives in a shared handle (an
//!   `Arc<Mutex<…>>` or `DashMap` behind a small typed API) created once,
//!   before any actor starts (`Shared` in `src/kubelet/shared.rs`), and
//!   handed to every instance by the child's factory — like an ETS table with an heir in
//!   OTP, or upstream's `podSyncStatuses` that housekeeping reads under a
//!   lock.
//!
//! Readers that need another actor's state synchronously (housekeeping,
//! GC, status, probes, volumes) read the shared handle, never ask the actor:
//! an ask can fail while the actor restarts, a read cannot.
//!
//! Every actor kind has a test that kills it mid-flight and shows the node
//! did not notice (`tests/chaos_actor_restarts.rs`,
//! `tests/chaos_cluster_actor_restarts.rs`, and the module tests of the
//! dynamic children), using the supervisor's
//! [`KillChild`](supervisor::KillChild) fault injection.
//!
//! # Execution model
//!
//! All actors run on one actix arbiter (a current-thread tokio runtime):
//! handlers are short and never block; CRI calls, API calls and probes are
//! futures spawned into the actor's context, so a slow runtime delays no
//! other actor. Work that is CPU-heavy or blocking runs elsewhere: file
//! reads of the static pod source and volume writes on the blocking pool,
//! the authenticated 10250 server (TLS, log streaming) on two threads of its
//! own. The P2 benchmark (10k pods on the instant mock) is the measure of
//! whether the one arbiter is the ceiling; see `docs/performance.md`.
//!
//! The pod workers — many independent actors whose syncs are the bulk of
//! the CPU at 10,000 pods — may run on arbiters of their own
//! (`KubeletConfig::pod_worker_threads`, through
//! [`ChildSpec::on_arbiter`](supervisor::ChildSpec::on_arbiter)): a pod's
//! worker always on the same one, its mailbox, exit reports and shared
//! handles crossing threads as they cross actors. Off by default (0): the
//! tests' paused clock covers the main arbiter only, and on a node with
//! few pods one thread is plenty.
//!
//! # Index of the tree
//!
//! The tree is declared in `src/kubelet/tree.rs`: the root's children in
//! start order, each built by one function (the pod core's in
//! `src/kubelet/pod_core.rs`); peers that send to each other get their
//! addresses from [`DeclaredChild`](supervisor::DeclaredChild)ren made
//! before any spec.
//!
//! | name in the tree | file | owns (shared handle) | receives |
//! |---|---|---|---|
//! | `root`, `pod-workers`, `probe-workers` | [`supervisor`] | children, restart windows, backoff | `StartChild`, `StopChild`, `KillChild`, `GetTree`, `Shutdown` |
//! | `events` | `src/cluster/events/actor.rs` | nothing (outbox is best effort) | `RecordEvent` |
//! | `runtime-health` | `src/runtime_health/actor.rs` | the health watch channel | (timer) |
//! | `status-syncer` | `src/cluster/status_sync/actor.rs` | nothing: resyncs every known status | `StatusSyncEvent`, `ResyncStatuses` |
//! | `status-manager` | `src/status/manager.rs` | `StatusCache` | `UpdatePodStatus`, `SetPodStatus`, `ForgetPodStatus`, `GetPodStatus` |
//! | `volume-manager` | `src/volumes/actor.rs` | the volume store (`VolumeHandle`) | `Reconcile` |
//! | `pod-<uid>` | `src/pod_workers/worker.rs` | nothing: resumes from `PodManager` + `PodCache` | `UpdatePod` |
//! | `pod-workers-manager` | `src/pod_workers/manager.rs` | `PodSyncStatuses` | `UpdatePod`, `SyncFinished`, `ForgetWorkers` |
//! | `pleg` | `src/pleg/actor.rs` | `PodCache` (statuses, global timestamp, pending targeted-relist requests) | relist timer; `RelistRequested` (from the cache); the CRI container event stream (`EventedPLEG`) |
//! | `sync-loop` | `src/sync_loop/actor.rs` | `SyncLoopState` (sources ready, admission), `Allocations` (pending resizes, with the pod workers) | `PodUpdate`, `SourcesReady`, `PlegEvents`, `SyncFinished`, `ProbeResult` |
//! | `probe-<pod>-<container>-<kind>` | `src/prober/worker.rs` | the probe store (`ProbeStore`) | (period timer) |
//! | `prober` | `src/prober/manager.rs` | `ProbeStore` | PLEG events |
//! | `pod-config` | `src/config/pod_config.rs` | `PodConfigState` (the merge) | `SourceSnapshot`, `GetManifestErrors` |
//! | `container-gc`, `image-gc` | `src/gc/container_actor.rs`, `src/gc/image_actor.rs` | `GcState` (image records, failure streaks) | (timers) |
//! | `container-log-manager` | `src/logrotate/actor.rs` | nothing: the "round running" flag is in its deps | (monitor timer) |
//! | `node-shutdown-manager` | `src/nodeshutdown/actor.rs` | `ShutdownHandle` (shutting down or not) | `NodeShutdownEvent` |
//! | `eviction-manager` | `src/eviction/actor.rs` | `EvictionHandle` (tracker, pressures, pod being evicted) | (monitoring timer) |
//! | `container-manager` | `src/cm/actor.rs` | `ContainerManager` (the on/off decision, cgroupfs) | (QoS update timer) |
//! | `oom-watcher` | `src/cm/oom_watcher.rs` | `OomState` (last kmsg record, partial kill) | (kmsg read timer) |
//! | `file-source`, `http-source` | `src/config/file_source.rs`, `src/config/http_source.rs` | last good manifests | (inotify, timers) |
//! | `node` | `src/cluster/node/actor.rs` | `NodeHandle` | runtime health changes |
//! | `node-lease` | `src/cluster/lease/actor.rs` | nothing | (renew timer) |
//! | `api-source` | `src/cluster/api_source.rs` | nothing: list+watch resumes | (watch stream) |
//! | `mirror-pods` | `src/cluster/mirror_pods/actor.rs` | `MirrorPods` | `SyncMirrorPods` |
//! | `node-conditions` | `src/cluster/node/local.rs` | nothing | runtime health changes |
//! | `runtime-classes` | `src/runtime_class/watch.rs` | `RuntimeClasses` (name → handler) | (watch stream) |
//! | `healthz`, `read-only` | `src/server/actor.rs` | bound addresses | HTTP |
//! | `kubelet-api` | `src/kubelet/api_server.rs` | nothing (serves shared views) | HTTPS on 10250 |
//! | `serving-cert-manager` | `src/certificate/serving_manager.rs` | `ServingCert` (the served pair) and `<cert-dir>/kubelet-server-current.pem` | (renewal timer) |
//! | `client-cert-manager` | `src/certificate/client_manager.rs` | `<cert-dir>/kubelet-client-current.pem` and the clients' `ClientSlot`s | (renewal timer) |
//!
//! Non-critical children (`healthz`, `read-only`, `kubelet-api`, `events`,
//! `container-log-manager`, `serving-cert-manager`, `client-cert-manager`,
//! `runtime-classes`) never take the
//! node agent down: see [`supervisor::Criticality`].

pub mod supervisor;
