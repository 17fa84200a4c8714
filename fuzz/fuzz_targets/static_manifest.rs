//! Static pod manifests (`staticPodPath` files): parse → API defaults →
//! static defaults → validate, as `load_static_pods` does for every file.
//! Whatever the bytes, no panic; an accepted pod carries every default
//! upstream's `applyDefaults` promises, and loading is deterministic.
#![no_main]

use actlet::config::annotations;
use actlet::config::static_pod::{ManifestOrigin, load_static_pods};
use libfuzzer_sys::fuzz_target;

const NODES: [&str; 3] = ["node-1", "Mixed.Case-Node", ""];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let Ok(body) = std::str::from_utf8(body) else {
        return;
    };
    let node = NODES[usize::from(selector % 3)];
    let origin = if selector & 0x80 == 0 {
        ManifestOrigin::File("/etc/kubernetes/manifests/fuzz.yaml")
    } else {
        ManifestOrigin::Url("http://config.local/pods")
    };
    let Ok(pods) = load_static_pods(body, origin, node) else {
        return;
    };
    for pod in &pods {
        let meta = &pod.metadata;
        let uid = meta.uid.as_deref().unwrap_or_default();
        assert!(!uid.is_empty(), "uid set");
        let suffix = format!("-{}", node.to_lowercase());
        assert!(meta.name.as_deref().unwrap_or_default().ends_with(&suffix), "name suffixed");
        assert!(!meta.namespace.as_deref().unwrap_or_default().is_empty(), "namespace set");
        let hash = meta.annotations.as_ref().and_then(|a| a.get(annotations::CONFIG_HASH));
        assert_eq!(hash.map(String::as_str), Some(uid), "config hash is the uid");
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some(node));
        assert_eq!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
        if let ManifestOrigin::File(_) = origin {
            let tolerations = spec.tolerations.as_deref().unwrap_or_default();
            assert!(tolerations.iter().any(|t| t.operator.as_deref() == Some("Exists")
                && t.effect.as_deref() == Some("NoExecute")
                && t.key.is_none()));
        }
    }
    let again = load_static_pods(body, origin, node).expect("accepted once, accepted again");
    assert!(again == pods, "loading is deterministic (same UIDs)");
});
