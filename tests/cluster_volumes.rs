//! Volumes and env in cluster mode (mock CRI, the test API server, real
//! time): configMap, secret and the admission-added projected service
//! account volume as files with their modes, env from ConfigMaps and
//! Secrets, a ConfigMap edit reaching the mounted file, and clear pod
//! events for missing objects, missing keys and objects the Node authorizer
//! refuses.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::cri::v1::CreateContainerRequest;
use actlet::testing::HookedRuntime;
use apiserver::TestApiServer;
use cluster::{ClusterNode, NODE, eventually, run, start_node};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// Envs of every created container, by container name.
type Envs = Arc<Mutex<BTreeMap<String, BTreeMap<String, String>>>>;

async fn node_with_envs(server: &TestApiServer, sync: Duration) -> (ClusterNode, Envs) {
    let envs: Envs = Arc::default();
    let seen = envs.clone();
    let mock = MockRuntime::new();
    let hooked = HookedRuntime::new(mock.clone(), move |call| {
        if let Some(CreateContainerRequest { config: Some(c), .. }) = call.request::<CreateContainerRequest>() {
            let name = c.metadata.as_ref().map(|m| m.name.clone()).unwrap_or_default();
            let env = c.envs.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect();
            seen.lock().unwrap_or_else(|p| p.into_inner()).insert(name, env);
        }
    });
    let node = start_node(server, mock, move |b| {
        b.configure(move |c| c.sync.sync_frequency = sync)
            .shared_runtime(Arc::new(hooked))
    })
    .await;
    (node, envs)
}

fn volume_dir(node: &ClusterNode, uid: &str, plugin: &str, name: &str) -> PathBuf {
    node.dir
        .path()
        .join("root/pods")
        .join(uid)
        .join("volumes")
        .join(plugin)
        .join(name)
}

fn read(path: &Path) -> Option<(String, u32)> {
    let content = std::fs::read_to_string(path).ok()?;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    Some((content, mode))
}

fn create(server: &TestApiServer, resource: &str, obj: Value) -> Value {
    server
        .store()
        .create(resource, "default", &obj)
        .unwrap_or_else(|e| panic!("create {resource}: {e}"))
}

fn app_objects(server: &TestApiServer) {
    create(
        server,
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config"},
            "data": {"mode": "fast", "level": "3"}}),
    );
    create(
        server,
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
            "data": {"password": "czNjcjN0"}}),
    );
}

fn pod_with(name: &str, container: Value, volumes: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 2,
            "containers": [container], "volumes": volumes}})
}

/// The claims of a JWT (base64url without padding).
fn jwt_claims(token: &str) -> Value {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let part = token.split('.').nth(1).unwrap_or_default();
    let (mut bits, mut n, mut out) = (0u32, 0, Vec::new());
    for c in part.bytes() {
        let Some(v) = ALPHABET.iter().position(|a| *a == c) else {
            break;
        };
        bits = (bits << 6) | v as u32;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    serde_json::from_slice(&out).unwrap_or(Value::Null)
}

#[test]
fn api_volumes_and_env_reach_the_container() {
    run(|| async {
        let server = TestApiServer::start();
        app_objects(&server);
        let (node, envs) = node_with_envs(&server, Duration::from_secs(60)).await;
        let container = json!({"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
            "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "mode"}}}],
            "envFrom": [{"secretRef": {"name": "db"}, "prefix": "DB_"}],
            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}, {"name": "sec", "mountPath": "/etc/db"}]});
        let volumes = json!([
            {"name": "cfg", "configMap": {"name": "app-config", "items": [{"key": "mode", "path": "conf/mode"}]}},
            {"name": "sec", "secret": {"secretName": "db", "defaultMode": 256}}
        ]);
        let created = create(&server, "pods", pod_with("web", container, volumes));
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let sa_volume = created["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .find(|n| n.starts_with("kube-api-access-"))
            .unwrap_or_else(|| panic!("no service account volume: {created}"))
            .to_string();
        let env = eventually("container created", T, || envs.lock().unwrap().get("app").cloned()).await;
        assert_eq!(env.get("MODE").map(String::as_str), Some("fast"));
        assert_eq!(env.get("DB_password").map(String::as_str), Some("s3cr3t"));
        assert_eq!(
            env.get("KUBERNETES_SERVICE_HOST").map(String::as_str),
            Some("10.96.0.1")
        );
        assert_eq!(
            env.get("KUBERNETES_PORT_443_TCP").map(String::as_str),
            Some("tcp://10.96.0.1:443")
        );

        let cfg = volume_dir(&node, &uid, "kubernetes.io~configmap", "cfg");
        assert_eq!(read(&cfg.join("conf/mode")), Some(("fast".into(), 0o644)));
        assert!(!cfg.join("level").exists(), "items select keys");
        let sec = volume_dir(&node, &uid, "kubernetes.io~secret", "sec");
        assert_eq!(read(&sec.join("password")), Some(("s3cr3t".into(), 0o400)));
        let sa = volume_dir(&node, &uid, "kubernetes.io~projected", &sa_volume);
        assert_eq!(read(&sa.join("namespace")), Some(("default".into(), 0o644)));
        let root_ca = server
            .store()
            .get("configmaps", "default", "kube-root-ca.crt")
            .unwrap_or_default();
        assert_eq!(
            read(&sa.join("ca.crt")).map(|(c, _)| c),
            root_ca["data"]["ca.crt"].as_str().map(str::to_string)
        );
        let (token, _) = read(&sa.join("token")).unwrap_or_default();
        let claims = jwt_claims(&token);
        assert_eq!(claims["kubernetes.io"]["pod"]["uid"], uid.as_str(), "{claims}");
        assert_eq!(claims["sub"], "system:serviceaccount:default:default");
        let requests = server.requests();
        let tr = requests
            .iter()
            .find(|r| r.path.ends_with("/serviceaccounts/default/token"))
            .unwrap_or_else(|| panic!("no TokenRequest"));
        let body = tr.body.clone().unwrap_or_default();
        assert_eq!(body["spec"]["expirationSeconds"], 3607);
        assert_eq!(body["spec"]["boundObjectRef"]["kind"], "Pod");
        assert_eq!(body["spec"]["boundObjectRef"]["name"], "web");

        // One watch per referenced object, as the Node authorizer allows.
        assert!(
            requests
                .iter()
                .any(|r| r.path == "/api/v1/namespaces/default/configmaps"
                    && r.query_param("fieldSelector").as_deref() == Some("metadata.name=app-config")),
            "configmap watched by name"
        );
        // Its first list comes from the API server's watch cache
        // (`resourceVersion=0`, client-go's reflector's first list): a
        // consistent list waits ~100 ms for etcd on an idle API server, on
        // every pod start that reads a new object.
        assert!(
            requests
                .iter()
                .any(|r| r.path == "/api/v1/namespaces/default/configmaps"
                    && r.query_param("fieldSelector").as_deref() == Some("metadata.name=app-config")
                    && r.query_param("watch").is_none()
                    && r.query_param("resourceVersion").as_deref() == Some("0")),
            "configmap listed from the watch cache: {:?}",
            requests
                .iter()
                .filter(|r| r.path.ends_with("/configmaps"))
                .map(|r| &r.query)
                .collect::<Vec<_>>()
        );
    });
}

#[test]
fn a_config_map_edit_reaches_the_mounted_file_within_the_sync_period() {
    run(|| async {
        let server = TestApiServer::start();
        app_objects(&server);
        let (node, envs) = node_with_envs(&server, Duration::from_secs(2)).await;
        let container = json!({"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]});
        let volumes = json!([{"name": "cfg", "configMap": {"name": "app-config"}}]);
        let created = create(&server, "pods", pod_with("web", container, volumes));
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        eventually("container created", T, || envs.lock().unwrap().get("app").cloned()).await;
        let file = volume_dir(&node, &uid, "kubernetes.io~configmap", "cfg").join("mode");
        assert_eq!(read(&file).map(|(c, _)| c).as_deref(), Some("fast"));
        server
            .store()
            .patch(
                "configmaps",
                "default",
                "app-config",
                None,
                "application/merge-patch+json",
                &json!({"data": {"mode": "slow"}}),
            )
            .unwrap_or_else(|e| panic!("patch: {e}"));
        let start = std::time::Instant::now();
        eventually("the edit in the mounted file", T, || {
            (read(&file).map(|(c, _)| c).as_deref() == Some("slow")).then_some(())
        })
        .await;
        assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());
    });
}

fn events_for(server: &TestApiServer, pod: &str) -> Vec<(String, String)> {
    server
        .store()
        .events()
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[test]
fn missing_objects_and_keys_are_clear_pod_events_and_waiting_reasons() {
    run(|| async {
        let server = TestApiServer::start();
        app_objects(&server);
        let (_node, _envs) = node_with_envs(&server, Duration::from_secs(60)).await;
        let sleep = |extra: Value| {
            let mut c = json!({"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"]});
            if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
                c.extend(e.clone());
            }
            c
        };
        create(
            &server,
            "pods",
            pod_with(
                "no-cm",
                sleep(json!({"volumeMounts": [{"name": "c", "mountPath": "/c"}]})),
                json!([{"name": "c", "configMap": {"name": "nope"}}]),
            ),
        );
        create(
            &server,
            "pods",
            pod_with(
                "optional-cm",
                sleep(json!({"volumeMounts": [{"name": "c", "mountPath": "/c"}]})),
                json!([{"name": "c", "configMap": {"name": "nope", "optional": true}}]),
            ),
        );
        create(
            &server,
            "pods",
            pod_with(
                "no-key",
                sleep(
                    json!({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "missing"}}}]}),
                ),
                json!([]),
            ),
        );
        let store = server.store();
        eventually("FailedMount for the missing configmap", T, || {
            events_for(&server, "no-cm").into_iter().find(|(r, m)| {
                r == "FailedMount" && m == "MountVolume.SetUp failed for volume \"c\" : configmap \"nope\" not found"
            })
        })
        .await;
        eventually("the optional volume's pod Running", T, || {
            let p = store.pod("default", "optional-cm")?;
            (p.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;
        let waiting = eventually("CreateContainerConfigError", T, || {
            let p = store.pod("default", "no-key")?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            let w = cs.state?.waiting?;
            (w.reason.as_deref() == Some("CreateContainerConfigError")).then_some(w)
        })
        .await;
        assert_eq!(
            waiting.message.as_deref(),
            Some("couldn't find key missing in ConfigMap default/app-config")
        );
        let no_cm = store.pod("default", "no-cm").and_then(|p| p.status).unwrap_or_default();
        assert_eq!(no_cm.phase.as_deref(), Some("Pending"));
    });
}

#[test]
fn an_object_the_node_may_not_read_is_a_forbidden_event_not_a_crash() {
    run(|| async {
        let server = TestApiServer::start();
        app_objects(&server);
        let manifests = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        // A static pod is not in the Node authorizer's graph: its ConfigMap is off limits.
        std::fs::write(
            manifests.path().join("s.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: s, namespace: default}\nspec:\n  containers: [{name: app, image: busybox:1.36, command: [sleep, '3600']}]\n  volumes: [{name: c, configMap: {name: app-config}}]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let path = manifests.path().to_path_buf();
        let node = start_node(&server, MockRuntime::new(), move |b| b.static_pod_path(path)).await;
        let name = format!("s-{NODE}");
        let (_, message) = eventually("FailedMount (forbidden)", T, || {
            events_for(&server, &name)
                .into_iter()
                .find(|(r, m)| r == "FailedMount" && m.contains("forbidden"))
        })
        .await;
        assert!(message.contains("configmaps \"app-config\" is forbidden"), "{message}");
        assert!(message.contains("no relationship found between node"), "{message}");
        let vm = node
            .kubelet
            .tree()
            .get("root/volume-manager")
            .unwrap_or_else(|| panic!("no volume manager"));
        assert_eq!(vm.restarts, 0, "a 403 is not a crash");
    });
}

#[test]
fn image_pull_secrets_reach_pull_image_and_a_missing_one_is_an_event() {
    use actlet::cri::mock::MockImage;
    use actlet::cri::v1::PullImageRequest;
    run(|| async {
        let server = TestApiServer::start();
        // {"auths": {"https://registry.example.com/v2/": {"auth": base64("robot:s3cr3t")}}}
        let config = r#"{"auths":{"https://registry.example.com/v2/":{"auth":"cm9ib3Q6czNjcjN0"}}}"#;
        let encoded = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(config)
        };
        create(
            &server,
            "secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"},
                "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": encoded}}),
        );
        let pulls: Arc<Mutex<Vec<PullImageRequest>>> = Arc::default();
        let seen = pulls.clone();
        let mock = MockRuntime::builder()
            .pullable(MockImage::new("registry.example.com/team/app:1"), Duration::ZERO)
            .build();
        let hooked = HookedRuntime::new(mock.clone(), move |call| {
            if let Some(req) = call.request::<PullImageRequest>() {
                seen.lock().unwrap_or_else(|p| p.into_inner()).push(req.clone());
            }
        });
        let _node = start_node(&server, mock, move |b| b.shared_runtime(Arc::new(hooked))).await;
        let pod = |name: &str, secret: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                "spec": {"nodeName": NODE, "imagePullSecrets": [{"name": secret}],
                    "containers": [{"name": "app", "image": "registry.example.com/team/app:1", "command": ["sleep", "3600"]}]}})
        };
        create(&server, "pods", pod("private", "regcred"));
        let req = eventually("PullImage", T, || pulls.lock().unwrap().first().cloned()).await;
        let auth = req.auth.unwrap_or_default();
        assert_eq!((auth.username.as_str(), auth.password.as_str()), ("robot", "s3cr3t"));
        assert_eq!(auth.server_address, "https://registry.example.com/v2/");
        eventually("private Running", T, || {
            let p = server.store().pod("default", "private")?;
            (p.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;

        create(&server, "pods", pod("no-secret", "missing"));
        let (_, message) = eventually("FailedToRetrieveImagePullSecret", T, || {
            events_for(&server, "no-secret")
                .into_iter()
                .find(|(r, _)| r == "FailedToRetrieveImagePullSecret")
        })
        .await;
        assert_eq!(
            message,
            "Unable to retrieve some image pull secrets (default/missing); attempting to pull the image may not succeed."
        );
    });
}
