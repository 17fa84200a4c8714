//! Typed messages: the contracts between actlet's actors.
//!
//! One file per protocol. Each message documents who sends it, who receives
//! it, and what the receiver guarantees. The flow of a pod through the system:
//!
//! ```text
//!  FileSource / HttpSource / ApiSource ──SourceSnapshot/SourceDelta──▶ PodConfig (merge)
//!  PodConfig ──PodUpdate──▶ SyncLoop ──UpdatePod──▶ PodWorkers ──▶ PodWorker (one per UID)
//!  Pleg ──PodLifecycleEvent──▶ SyncLoop           PodWorker ──UpdatePodStatus──▶ StatusManager
//!  ProbeWorker ──ProbeResult──▶ SyncLoop          RuntimeHealth ──RuntimeHealthChanged──▶ SyncLoop, Node
//! ```
//!
//! Pods travel as `Arc<Pod>` so fan-out costs a pointer copy, never a deep clone.

pub mod event;
pub mod node;
pub mod node_shutdown;
pub mod pleg;
pub mod pod_update;
pub mod pod_work;
pub mod probe;
pub mod runtime_health;
pub mod status;
pub mod volumes;

mod pod_uid;
pub use pod_uid::PodUid;
