//! The reconciler under a supervisor: a panic mid-pass costs one pass; the
//! new instance continues from the shared store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use tokio::time::Instant;

use crate::actors::supervisor::{ChildState, SupervisorSpec};
use crate::events::EventRecorder;
use crate::kuberuntime::env::EnvContext;
use crate::messages::pod_update::PodSource;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use crate::volumes::objects::{ObjectError, ObjectSource};
use crate::volumes::{VolumeInputs, assemble};

/// Serves ConfigMap `app` ({"k": "v"}), panicking on the first read.
#[derive(Default)]
struct PanicOnce {
    armed: AtomicBool,
    reads: AtomicUsize,
}

#[async_trait::async_trait]
impl ObjectSource for PanicOnce {
    async fn config_map(&self, _: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected panic while reading configmap {name}");
        }
        Ok(ConfigMap {
            data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
            ..Default::default()
        })
    }
    async fn secret(&self, _: &str, name: &str) -> Result<Secret, ObjectError> {
        Err(ObjectError::NotFound {
            kind: "secret",
            name: name.into(),
        })
    }
    async fn token(&self, _: &str, _: &str, _: TokenRequest) -> Result<TokenRequest, ObjectError> {
        Err(ObjectError::Other("no tokens".into()))
    }
    fn has_client(&self) -> bool {
        true
    }
}

fn pod() -> Pod {
    serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: prod, uid: u1}\nspec:\n  containers: [{name: c}]\n  volumes:\n  - {name: scratch, emptyDir: {}}\n  - {name: cfg, configMap: {name: app}}",
    )
    .unwrap()
}

#[test]
fn a_panic_mid_pass_is_contained_and_the_store_survives() {
    crate::testing::run_paused(async {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let objects = Arc::new(PanicOnce {
            armed: AtomicBool::new(true),
            ..Default::default()
        });
        let (pods, cache) = (PodManager::new(), PodCache::new());
        let p = Arc::new(pod());
        pods.upsert(p.clone(), PodSource::Api);
        let vs = assemble(VolumeInputs {
            root_dir: root.clone(),
            objects: objects.clone(),
            pods: pods.clone(),
            cache: cache.clone(),
            events: EventRecorder::disabled(),
            env: EnvContext::default(),
            resync: Duration::from_secs(60),
            period: Duration::from_secs(1),
            terminated: None,
        });
        let (handle, store) = (vs.handle.clone(), vs.store.clone());
        let tree = SupervisorSpec::new("root").child(vs.spec).start_root();

        let ctx = handle.prepare(&p).await.unwrap().unwrap();
        let info = tree.tree().get("root/volume-manager").unwrap();
        assert_eq!((info.state, info.restarts), (ChildState::Running, 1), "{info:?}");
        assert_eq!(ctx.volumes.keys().collect::<Vec<_>>(), ["cfg", "scratch"]);
        let cfg = root.join("pods/u1/volumes/kubernetes.io~configmap/cfg/k");
        assert_eq!(std::fs::read_to_string(&cfg).unwrap(), "v");
        // The emptyDir set up before the panic was not set up again: its
        // content is untouched and the store kept it.
        let scratch = root.join("pods/u1/volumes/kubernetes.io~empty-dir/scratch");
        std::fs::write(scratch.join("marker"), "keep").unwrap();
        assert_eq!(objects.reads.load(Ordering::SeqCst), 2, "one read panicked, one served");

        // Later passes do not rewrite an up-to-date API volume before the sync period.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(objects.reads.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(objects.reads.load(Ordering::SeqCst) >= 3, "rewritten every sync period");
        assert!(scratch.join("marker").exists());

        // The pod goes; nothing of it runs: the reconciler tears it down.
        pods.remove(&"u1".into());
        cache.update_time(Instant::now());
        store.set_sources_ready();
        let deadline = Instant::now() + Duration::from_secs(10);
        while root.join("pods/u1").exists() {
            assert!(Instant::now() < deadline, "pod dir not removed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(store.pod("u1").is_none());
    });
}
