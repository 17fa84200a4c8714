//! The kubelet API behind a real kube-apiserver (v1.36, envtest): the API
//! server reaches actlet's HTTPS port with its `--kubelet-client-certificate`
//! (verified against actlet's `--client-ca-file`, then authorized by a
//! SubjectAccessReview actlet sends with its node credentials), so
//! `kubectl logs` (`GET pods/log`) returns what the container wrote; a
//! ServiceAccount token sent to the kubelet directly is checked by a
//! TokenReview and refused by the SubjectAccessReview (403), a made-up one
//! is a 401. The runtime is `actlet mock-cri`; skipped loudly without
//! `KUBEBUILDER_ASSETS`.

#[path = "support/envtest.rs"]
mod envtest;
#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::Api;
use kube::api::{LogParams, PostParams};

const WAIT: Duration = Duration::from_secs(90);

/// A child process killed (by PID) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn log_tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().rev().take(30).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}

async fn poll<T, F: std::future::Future<Output = Option<T>>>(what: &str, log: &Path, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; actlet log:\n{}",
            log_tail(log)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_through_the_api_server_and_tokens_via_token_review() {
    let Some(env) = envtest::EnvTest::builder()
        .args_with(|pki| {
            let pair = pki.client_cert("kube-apiserver-kubelet-client", &["system:masters"]);
            let (crt, key) = pki.write("kubelet-client", &pair);
            vec![
                format!("--kubelet-client-certificate={}", crt.display()),
                format!("--kubelet-client-key={}", key.display()),
                "--kubelet-preferred-address-types=InternalIP".into(),
            ]
        })
        .start()
        .await
    else {
        return;
    };
    env.prepare_namespace("default").await;
    let node = format!("api-node-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let sock = format!("unix://{}", dir.path().join("mock.sock").display());
    let _mock = Proc(
        Command::new(env!("CARGO_BIN_EXE_actlet"))
            .args(["mock-cri", "--listen", &sock])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let port = free_port();
    let log = dir.path().join("actlet.log");
    let _actlet = Proc(
        Command::new(env!("CARGO_BIN_EXE_actlet"))
            .arg("--kubeconfig")
            .arg(env.node_kubeconfig(&node))
            // Eviction runs on the real node stats, but no test here may depend on
            // how full the host disk is (upstream defaults evict at 10-15% free, and
            // a CI machine full of build output once had under 1% of 252 GiB free).
            .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
            .args(["--hostname-override", &node, "--node-ip", "127.0.0.1"])
            .args(["--container-runtime-endpoint", &sock])
            .arg("--root-dir")
            .arg(dir.path().join("root"))
            .args(["--read-only-port", "0", "--healthz-port", "0", "--address", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--client-ca-file")
            .arg(env.pki().ca_cert_path())
            .args([
                "--anonymous-auth=false",
                "--authentication-token-webhook",
                "--authorization-mode",
                "Webhook",
            ])
            .env("RUST_LOG", "info,actlet=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let admin = env.admin_client().await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "talker", "namespace": "default"},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "app", "image": "docker.io/library/busybox:1.36",
                            "command": ["sh", "-c", "echo hello from actlet; echo second line; sleep 3600"]}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    poll("the pod to run", &log, || async {
        let p = pods.get_opt("talker").await.ok().flatten()?;
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    // kubectl logs talker: API server → node proxy → actlet /containerLogs
    let logs = poll("the pod's logs through the API server", &log, || async {
        pods.logs("talker", &LogParams::default())
            .await
            .ok()
            .filter(|l| l.contains("second line"))
    })
    .await;
    assert_eq!(logs, "hello from actlet\nsecond line\n");
    let tail = LogParams {
        tail_lines: Some(1),
        timestamps: true,
        ..Default::default()
    };
    let last = pods.logs("talker", &tail).await.unwrap();
    assert!(last.ends_with(" second line\n") && last.starts_with("20"), "{last:?}");

    // a ServiceAccount token, straight to the kubelet: TokenReview says who, the SAR says no
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let tr = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let tr: TokenRequest = sas
        .create_subresource("token", "default", &PostParams::default(), &tr)
        .await
        .unwrap();
    let token = tr.status.unwrap().token.unwrap();
    let client = kubelet_api::https(None);
    let url = format!("https://127.0.0.1:{port}/pods");
    let resp = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    assert_eq!(
        resp.text().await.unwrap(),
        "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
    );
    let resp = client.get(&url).bearer_auth("made-up").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let resp = client.get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401, "anonymous access is off");

    // Prometheus with a cluster-admin certificate (the API server's node proxy refuses
    // loopback node addresses): the node's API traffic is counted as client-go counts it
    let admin_cert = env.pki().client_cert("metrics-scraper", &["system:masters"]);
    let scraper = kubelet_api::https(Some(&kubelet_api::ClientCert {
        cert: admin_cert.cert_pem,
        key: admin_cert.key_pem,
    }));
    let resp = scraper
        .get(format!("https://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "the SAR allows system:masters");
    let text = resp.text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let requests = |method: &str| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == "rest_client_requests_total")
            .filter(|s| {
                s.labels.get("method") == Some(method) && s.labels.get("code").is_some_and(|c| c.starts_with('2'))
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    let writes = requests("POST") + requests("PUT") + requests("PATCH");
    assert!(
        requests("GET") >= 1.0 && writes >= 2.0,
        "node traffic uncounted:\n{text}"
    );
    assert!(
        text.contains(&format!("kubelet_node_name{{node=\"{node}\"}} 1")),
        "{text}"
    );
}

/// Stops and removes (through the CRI) the sandboxes of `pod`, also when the test failed.
struct CriCleanup {
    endpoint: String,
    pod: String,
}

impl Drop for CriCleanup {
    fn drop(&mut self) {
        let (endpoint, pod) = (self.endpoint.clone(), self.pod.clone());
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Runtime::new() else { return };
            rt.block_on(async move {
                use actlet::cri::{CriClient, Runtime, v1};
                let Ok(cri) = CriClient::new(&endpoint, Duration::from_secs(30)) else {
                    return;
                };
                let Ok(list) = cri.list_pod_sandbox(v1::ListPodSandboxRequest::default()).await else {
                    return;
                };
                for sb in list
                    .items
                    .iter()
                    .filter(|s| s.metadata.as_ref().is_some_and(|m| m.name == pod))
                {
                    let id = sb.id.clone();
                    let _ = cri
                        .stop_pod_sandbox(v1::StopPodSandboxRequest {
                            pod_sandbox_id: id.clone(),
                        })
                        .await;
                    let _ = cri
                        .remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id })
                        .await;
                }
            })
        })
        .join();
    }
}

/// `kubectl exec` (with and without stdin), `kubectl port-forward` and
/// `kubectl logs -f` through kube-apiserver to actlet on a real containerd:
/// the API server speaks SPDY to actlet (translating kube-rs's WebSocket)
/// or passes the WebSocket through, actlet splices it to containerd's
/// streaming server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_and_logs_follow_on_containerd() {
    use futures::{AsyncBufReadExt, StreamExt};
    use kube::api::AttachParams;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let endpoint = match std::env::var("ACTLET_CRI_ENDPOINT") {
        Ok(ep) if !ep.is_empty() => ep,
        _ => {
            assert_ne!(
                std::env::var("ACTLET_REQUIRE_CONTAINERD").as_deref(),
                Ok("1"),
                "ACTLET_REQUIRE_CONTAINERD=1 but ACTLET_CRI_ENDPOINT is not set"
            );
            eprintln!("SKIPPED kubectl_exec_and_logs_follow_on_containerd: ACTLET_CRI_ENDPOINT is not set");
            return;
        }
    };
    let Some(env) = envtest::EnvTest::builder()
        .args_with(|pki| {
            let pair = pki.client_cert("kube-apiserver-kubelet-client", &["system:masters"]);
            let (crt, key) = pki.write("kubelet-client", &pair);
            vec![
                format!("--kubelet-client-certificate={}", crt.display()),
                format!("--kubelet-client-key={}", key.display()),
                "--kubelet-preferred-address-types=InternalIP".into(),
            ]
        })
        .start()
        .await
    else {
        return;
    };
    env.prepare_namespace("default").await;
    let pid = std::process::id();
    let node = format!("actsys-envexec-{pid}");
    let name = format!("exec-{pid}");
    let _cleanup = CriCleanup {
        endpoint: endpoint.clone(),
        pod: name.clone(),
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("actlet.log");
    let _actlet = Proc(
        Command::new(env!("CARGO_BIN_EXE_actlet"))
            .arg("--kubeconfig")
            .arg(env.node_kubeconfig(&node))
            // Eviction runs on the real node stats, but no test here may depend on
            // how full the host disk is (upstream defaults evict at 10-15% free, and
            // a CI machine full of build output once had under 1% of 252 GiB free).
            .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
            .args(["--hostname-override", &node, "--node-ip", "127.0.0.1"])
            .args(["--container-runtime-endpoint", &endpoint])
            .arg("--root-dir")
            .arg(dir.path().join("root"))
            .args(["--read-only-port", "0", "--healthz-port", "0", "--address", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--client-ca-file")
            .arg(env.pki().ca_cert_path())
            .args(["--anonymous-auth=false", "--authorization-mode", "Webhook"])
            .env("RUST_LOG", "info,actlet=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let admin = env.admin_client().await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "app", "image": "docker.io/library/busybox:1.36", "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", "echo started; i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done"]}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    poll("the pod to run", &log, || async {
        let p = pods.get_opt(&name).await.ok().flatten()?;
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;

    // kubectl exec -- echo
    let mut proc = pods
        .exec(&name, ["echo", "hello", "exec"], &AttachParams::default().stderr(false))
        .await
        .unwrap_or_else(|e| panic!("exec: {e}; actlet log:\n{}", log_tail(&log)));
    let mut out = String::new();
    proc.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    let status = proc.take_status().unwrap().await;
    assert_eq!(out, "hello exec\n");
    assert_eq!(status.and_then(|s| s.status).as_deref(), Some("Success"));

    // kubectl exec -i -- cat: stdin goes in, comes back out
    let mut proc = pods
        .exec(&name, ["cat"], &AttachParams::default().stdin(true).stderr(false))
        .await
        .unwrap();
    let mut stdin = proc.stdin().unwrap();
    stdin.write_all(b"via stdin\n").await.unwrap();
    let mut stdout = proc.stdout().unwrap();
    let mut buf = vec![0u8; 10];
    tokio::time::timeout(Duration::from_secs(20), stdout.read_exact(&mut buf))
        .await
        .expect("cat echoed nothing")
        .unwrap();
    assert_eq!(buf, b"via stdin\n");
    drop(stdin);
    proc.abort();

    // kubectl port-forward: busybox httpd in the pod, reached through the
    // API server's node proxy and actlet's /portForward
    let mut httpd = pods
        .exec(
            &name,
            [
                "sh",
                "-c",
                "echo -n forwarded > /tmp/index.html && httpd -p 8080 -h /tmp && echo up",
            ],
            &AttachParams::default().stderr(false),
        )
        .await
        .unwrap_or_else(|e| panic!("exec httpd: {e}; actlet log:\n{}", log_tail(&log)));
    let mut up = String::new();
    httpd.stdout().unwrap().read_to_string(&mut up).await.unwrap();
    assert_eq!(up, "up\n");
    let mut forward = pods
        .portforward(&name, &[8080])
        .await
        .unwrap_or_else(|e| panic!("port-forward: {e}; actlet log:\n{}", log_tail(&log)));
    let mut conn = forward.take_stream(8080).expect("a stream for port 8080");
    conn.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), conn.read_to_end(&mut response))
        .await
        .expect("no response through the port-forward")
        .unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(
        response.starts_with("HTTP/1.") && response.contains(" 200 "),
        "{response}"
    );
    assert!(response.ends_with("forwarded"), "{response}");
    drop(conn);
    forward.abort();

    // kubectl logs -f: lines keep coming
    let stream = pods
        .log_stream(
            &name,
            &LogParams {
                follow: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut lines = stream.lines();
    let first = lines.next().await.unwrap().unwrap();
    assert_eq!(first, "started");
    let mut ticks = vec![];
    while ticks.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next())
            .await
            .expect("follow stalled")
            .unwrap()
            .unwrap();
        ticks.push(line);
    }
    assert_eq!(ticks, ["tick 1", "tick 2", "tick 3"]);
}
