//! RuntimeClass resolution (upstream `pkg/kubelet/runtimeclass`): a pod's
//! `spec.runtimeClassName` names a `node.k8s.io/v1` RuntimeClass whose
//! `handler` is the CRI runtime handler of `RunPodSandbox`.
//!
//! [`RuntimeClasses`] is a shared handle (it lives outside every actor): in
//! cluster mode the [`RuntimeClassWatch`] actor keeps it in step with the API
//! server; in standalone mode it holds what an embedder
//! [`insert`](RuntimeClasses::insert)s.
//! An unnamed class resolves to the default handler (`""`); an unknown name is
//! [`RuntimeClassError::NotFound`], with upstream's lister message.

mod watch;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

pub use watch::RuntimeClassWatch;

/// Why a RuntimeClass name did not resolve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeClassError {
    /// No RuntimeClass of that name exists (upstream's `IsNotFound` error text).
    #[error("runtimeclass.node.k8s.io {0:?} not found")]
    NotFound(String),
    /// The cluster's RuntimeClasses have not been listed yet.
    #[error("failed to lookup RuntimeClass {0}: RuntimeClass cache not synced")]
    NotSynced(String),
}

#[derive(Debug, Default)]
struct State {
    /// RuntimeClass name → CRI handler.
    handlers: HashMap<String, String>,
    /// False until the first list (cluster mode) completed.
    synced: bool,
}

/// The known RuntimeClasses (name → handler); clones share one table.
///
/// ```
/// use actlet::runtime_class::{RuntimeClasses, RuntimeClassError};
/// let classes = RuntimeClasses::new();
/// assert_eq!(classes.lookup(None), Ok(String::new()));
/// assert_eq!(classes.lookup(Some("gvisor")), Err(RuntimeClassError::NotFound("gvisor".into())));
/// classes.insert("gvisor", "runsc");
/// assert_eq!(classes.lookup(Some("gvisor")).as_deref(), Ok("runsc"));
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeClasses {
    inner: Arc<RwLock<State>>,
}

impl Default for RuntimeClasses {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for RuntimeClasses {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for RuntimeClasses {}

impl RuntimeClasses {
    /// An empty, synced table (standalone mode: only what is inserted exists).
    pub fn new() -> Self {
        Self {
            inner: Arc::new(RwLock::new(State {
                handlers: HashMap::new(),
                synced: true,
            })),
        }
    }

    /// An empty table that reports [`RuntimeClassError::NotSynced`] until
    /// [`replace_all`](Self::replace_all) is first called (cluster mode).
    pub fn unsynced() -> Self {
        Self {
            inner: Arc::new(RwLock::new(State::default())),
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds or replaces class `name` with CRI handler `handler`.
    pub fn insert(&self, name: &str, handler: &str) {
        self.write().handlers.insert(name.to_string(), handler.to_string());
    }

    /// Forgets class `name`.
    pub fn remove(&self, name: &str) {
        self.write().handlers.remove(name);
    }

    /// Replaces the whole table (a fresh list) and marks it synced.
    pub fn replace_all(&self, handlers: HashMap<String, String>) {
        let mut state = self.write();
        state.handlers = handlers;
        state.synced = true;
    }

    /// The CRI handler for `runtime_class_name` (upstream `LookupRuntimeHandler`):
    /// none or `""` → `""` (the runtime's default).
    pub fn lookup(&self, runtime_class_name: Option<&str>) -> Result<String, RuntimeClassError> {
        let Some(name) = runtime_class_name.filter(|n| !n.is_empty()) else {
            return Ok(String::new());
        };
        let state = self.read();
        match state.handlers.get(name) {
            Some(handler) => Ok(handler.clone()),
            None if !state.synced => Err(RuntimeClassError::NotSynced(name.to_string())),
            None => Err(RuntimeClassError::NotFound(name.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_name_is_the_default_handler() {
        let c = RuntimeClasses::unsynced();
        assert_eq!(c.lookup(None), Ok(String::new()));
        assert_eq!(c.lookup(Some("")), Ok(String::new()));
    }

    #[test]
    fn unknown_class_has_upstreams_not_found_message() {
        let c = RuntimeClasses::new();
        let err = c.lookup(Some("kata")).unwrap_err();
        assert_eq!(err.to_string(), r#"runtimeclass.node.k8s.io "kata" not found"#);
    }

    #[test]
    fn unsynced_table_is_not_a_not_found() {
        let c = RuntimeClasses::unsynced();
        assert_eq!(c.lookup(Some("kata")), Err(RuntimeClassError::NotSynced("kata".into())));
        c.replace_all(HashMap::from([("kata".to_string(), "kata-qemu".to_string())]));
        assert_eq!(c.lookup(Some("kata")).as_deref(), Ok("kata-qemu"));
        assert_eq!(c.lookup(Some("x")), Err(RuntimeClassError::NotFound("x".into())));
    }

    #[test]
    fn clones_share_inserts_and_removals() {
        let c = RuntimeClasses::new();
        let d = c.clone();
        c.insert("a", "runa");
        assert_eq!(d.lookup(Some("a")).as_deref(), Ok("runa"));
        d.remove("a");
        assert!(c.lookup(Some("a")).is_err());
        assert_eq!(c, d);
        assert_ne!(c, RuntimeClasses::new());
    }
}
