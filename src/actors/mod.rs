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
//! Work in flight is the one thing an instance cannot hand over, so two
//! rules cover it. A CRI mutation is never cancelled with its caller: it
//! runs as a task of its own (`cri::to_completion`), counted per pod until
//! the runtime answers, and a pod worker's step starts only once its pod
//! has none in flight (a successor never acts on a view its predecessor's
//! last call is about to change). And a kill is kept in the pod's
//! lifecycle record (`PodSyncStatuses`) until the pod has terminated, so a
//! worker rebuilt after a panic, or made again after its supervisor lost
//! it, runs it again (`tests/chaos_cri_mutations.rs`).
//!
//! Every actor kind has a test that kills it mid-flight (the supervisor's
//! [`KillChild`](supervisor::KillChild) fault injection, or a real panic)
//! and shows the node did not notice: the last column of the index below
//! names it.
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
//! Each core kind named with `tests/chaos_actor_restarts.rs` below is killed
//! twice more by `tests/chaos_actor_restarts_mid_wave.rs` (same test name
//! stem, `…_killed_mid_wave`): while a wave of pods is starting and while it
//! is stopping.
//!
//! | name in the tree | file | owns (shared handle) | receives | restart test |
//! |---|---|---|---|---|
//! | `root` | [`supervisor`] | children, restart windows, backoff | `StartChild`, `StopChild`, `KillChild`, `GetTree`, `Shutdown` | — (its failure ends the process: `tests/chaos_kill9.rs::kill_9_mid_sync_ten_times`) |
//! | `pod-workers` | [`supervisor`] | children, restart windows, backoff | as `root` | `tests/chaos_actor_restarts.rs::pod_workers_supervisor_restart_goes_unnoticed` |
//! | `probe-workers` | [`supervisor`] | children, restart windows, backoff | as `root` | `tests/chaos_probe_restarts.rs::probe_workers_restart_mid_probing_converges_and_restarts_nothing` |
//! | `events` | `src/cluster/events/actor.rs` | nothing (outbox is best effort) | `RecordEvent` | `tests/chaos_cluster_actor_restarts.rs::events_restart_goes_unnoticed` |
//! | `runtime-health` | `src/runtime_health/actor.rs` | the health watch channel | (timer) | `tests/chaos_actor_restarts.rs::runtime_health_restart_goes_unnoticed` |
//! | `status-syncer` | `src/cluster/status_sync/actor.rs` | nothing: resyncs every known status | `StatusSyncEvent`, `ResyncStatuses` | `tests/chaos_cluster_actor_restarts.rs::status_syncer_restart_goes_unnoticed` |
//! | `status-manager` | `src/status/manager.rs` | `StatusCache` | `UpdatePodStatus`, `SetPodStatus`, `ForgetPodStatus`, `GetPodStatus` | `tests/chaos_actor_restarts.rs::status_manager_restart_goes_unnoticed` |
//! | `volume-manager` | `src/volumes/actor.rs` | the volume store (`VolumeHandle`) | `Reconcile` | `tests/system_mock_volumes.rs::killing_the_volume_manager_mid_flight_goes_unnoticed` |
//! | `pod-<uid>` | `src/pod_workers/worker.rs` | nothing: resumes from `PodManager` + `PodCache` | `UpdatePod` | `tests/system_mock_recovery.rs::worker_panic_mid_sync_recovers_without_duplicate_containers` |
//! | `pod-workers-manager` | `src/pod_workers/manager.rs` | `PodSyncStatuses`, `FinishedSteps` (reports waiting for it) | `UpdatePod`, `SyncFinished` (through `FinishedSteps`), `ForgetWorkers` | `tests/chaos_actor_restarts.rs::pod_workers_manager_restart_goes_unnoticed` |
//! | `pleg` | `src/pleg/actor.rs` | `PodCache` (statuses, global timestamp, pending targeted-relist requests) | relist timer; `RelistRequested` (from the cache); the CRI container event stream (`EventedPLEG`) | `tests/chaos_actor_restarts.rs::pleg_restart_goes_unnoticed` |
//! | `sync-loop` | `src/sync_loop/actor.rs` | `SyncLoopState` (sources ready, admission), `Allocations` (pending resizes, with the pod workers) | `PodUpdate`, `SourcesReady`, `PlegEvents`, `SyncFinished`, `ProbeResult` | `tests/chaos_actor_restarts.rs::sync_loop_restart_goes_unnoticed`, `::sync_loop_restart_keeps_the_admission_totals` |
//! | `probe-<kind>-<container>.<uid>` | `src/prober/worker.rs` | the probe store (`ProbeStore`) | (period timer) | `tests/chaos_probe_restarts.rs::a_liveness_worker_killed_mid_probe_restarts_nothing_and_keeps_guarding`; `tests/system_mock_probes.rs::panicking_probe_actors_do_not_flip_a_ready_container` |
//! | `prober` | `src/prober/manager.rs` | `ProbeStore` | (reconcile timer) | `tests/system_mock_probes.rs::panicking_probe_actors_do_not_flip_a_ready_container` |
//! | `pod-config` | `src/config/pod_config.rs` | `PodConfigState` (the merge) | `SourceSnapshot`, `GetManifestErrors` | `tests/chaos_actor_restarts.rs::pod_config_restart_goes_unnoticed` |
//! | `container-gc` | `src/gc/container_actor.rs` | `GcState` (image records, failure streaks) | (timer) | `tests/chaos_actor_restarts.rs::container_gc_restart_goes_unnoticed`; `tests/system_mock_gc.rs::container_gc_panic_mid_round_loses_nothing` |
//! | `image-gc` | `src/gc/image_actor.rs` | `GcState` (image records, failure streaks) | (timer) | `tests/chaos_actor_restarts.rs::image_gc_restart_goes_unnoticed` |
//! | `container-log-manager` | `src/logrotate/actor.rs` | nothing: the "round running" flag is in its deps | (monitor timer) | `tests/chaos_actor_restarts.rs::container_log_manager_restart_goes_unnoticed` |
//! | `node-shutdown-manager` | `src/nodeshutdown/actor.rs` | `ShutdownHandle` (shutting down or not) | `NodeShutdownEvent` | `tests/system_mock_node_shutdown.rs::a_manager_killed_mid_shutdown_resumes_it` |
//! | `eviction-manager` | `src/eviction/actor.rs` | `EvictionHandle` (tracker, pressures, pod being evicted) | (monitoring timer) | `tests/system_mock_eviction.rs::memory_pressure_evicts_besteffort_first_and_refuses_new_ones` |
//! | `container-manager` | `src/cm/actor.rs` | `ContainerManager` (the on/off decision, cgroupfs) | (QoS update timer) | `tests/chaos_actor_restarts.rs::container_manager_restart_goes_unnoticed` |
//! | `oom-watcher` | `src/cm/oom_watcher.rs` | `OomState` (last kmsg record, partial kill) | (kmsg read timer) | `tests/chaos_actor_restarts.rs::oom_watcher_restart_goes_unnoticed` |
//! | `file-source` | `src/config/file_source.rs` | `SharedLastGood` (last good pods of broken manifests) | (inotify, timer) | `tests/chaos_source_restarts.rs::file_source_restart_while_manifests_change_loses_nothing`, `::file_source_restart_keeps_the_last_good_pod_of_a_broken_manifest` |
//! | `http-source` | `src/config/http_source.rs` | `SharedLastGood` (last good pods of a broken body) | (timer) | `tests/chaos_source_restarts.rs::http_source_restart_while_the_pod_list_changes_loses_nothing`, `::http_source_restart_keeps_the_last_good_pods_of_a_broken_body` |
//! | `source-<name>` | `src/embed/source.rs` (`SourceRunner`) | nothing: the embedder's factory builds a fresh source; pod-config keeps the merge | (the source's `next()`) | `tests/embedding_public_api.rs::a_panicking_source_is_restarted_and_its_pods_keep_running` |
//! | `node` | `src/cluster/node/actor.rs` | `NodeHandle` | runtime health changes | `tests/chaos_cluster_actor_restarts.rs::node_restart_goes_unnoticed` |
//! | `node-lease` | `src/cluster/lease/actor.rs` | nothing | (renew timer) | `tests/chaos_cluster_actor_restarts.rs::node_lease_restart_goes_unnoticed` |
//! | `api-source` | `src/cluster/api_source.rs` | nothing: list+watch resumes | (watch stream) | `tests/chaos_cluster_actor_restarts.rs::api_source_restart_goes_unnoticed` |
//! | `mirror-pods` | `src/cluster/mirror_pods/actor.rs` | `MirrorPods` | `SyncMirrorPods` | `tests/chaos_cluster_actor_restarts.rs::mirror_pods_restart_goes_unnoticed` |
//! | `node-conditions` | `src/cluster/node/local.rs` | `NodeHandle` (the conditions last reported) | runtime health changes | `tests/chaos_actor_restarts.rs::node_conditions_restart_goes_unnoticed`, `::node_conditions_restart_keeps_observers_informed` |
//! | `runtime-classes` | `src/runtime_class/watch.rs` | `RuntimeClasses` (name → handler) | (watch stream) | `tests/envtest_runtime_class.rs::pods_run_with_their_runtime_class_handler_across_a_watch_restart` (envtest) |
//! | `healthz` | `src/server/actor.rs` | bound addresses, `PreviousStop` | HTTP | `tests/chaos_server_restarts.rs::healthz_killed_while_serving_answers_again_on_its_port` |
//! | `read-only` | `src/server/actor.rs` | bound addresses, `PreviousStop` | HTTP | `tests/server_api.rs::read_only_server_restart_goes_unnoticed` |
//! | `kubelet-api` | `src/kubelet/api_server.rs`, `src/server/secure.rs` | bound addresses, `PreviousStop` (serves shared views) | HTTPS on 10250 | `tests/chaos_server_restarts.rs::kubelet_api_killed_while_serving_answers_again_on_its_port` |
//! | `serving-cert-manager` | `src/certificate/serving_manager.rs` | `ServingCert` (the served pair) and `<cert-dir>/kubelet-server-current.pem` | (renewal timer) | `tests/certificate_serving.rs::serving_cert_manager_restart_goes_unnoticed` (envtest) |
//! | `client-cert-manager` | `src/certificate/client_manager.rs` | `<cert-dir>/kubelet-client-current.pem` and the clients' `ClientSlot`s | (renewal timer) | `tests/certificate_client_rotation.rs::the_client_certificate_is_rotated_and_new_connections_use_it` (envtest) |
//!
//! Non-critical children (`healthz`, `read-only`, `kubelet-api`, `events`,
//! `container-log-manager`, `oom-watcher`, `serving-cert-manager`,
//! `client-cert-manager`, `runtime-classes`) never take the node agent
//! down: see [`supervisor::Criticality`].

pub mod supervisor;
