//! actlet on a runtime written by the caller: [`ProcessRuntime`] runs
//! containers as host processes. One pod (`sh -c 'echo hi; sleep 2'`,
//! restartPolicy Never) runs to `Succeeded`; every phase transition is
//! printed; then the agent shuts down and exits 0.
//!
//! `cargo run --example own_runtime`

mod runtime;

use std::time::Duration;

use actlet::{ActletBuilder, PodSource, SourceError};
use k8s_openapi::api::core::v1::Pod;
use runtime::ProcessRuntime;
use tokio::sync::mpsc;

/// One pod, once.
struct OnePod(bool);

#[async_trait::async_trait]
impl PodSource for OnePod {
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
        if std::mem::replace(&mut self.0, true) {
            std::future::pending::<()>().await;
        }
        let pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "hello", "uid": "uid-hello"},
            "spec": {
                "hostNetwork": true,
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 5,
                "containers": [{"name": "main", "image": "host", "command": ["sh", "-c", "echo hi; sleep 2"]}]
            }
        }));
        Ok(vec![pod.map_err(|e| SourceError(e.to_string()))?])
    }
}

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("own-runtime-{}", std::process::id()));
    let (tx, mut phases) = mpsc::unbounded_channel();
    let kubelet = ActletBuilder::new("process-node")
        .configure(|c| {
            c.root_dir = dir.join("root");
            c.pod_logs_dir = dir.join("logs");
            c.container_logs_dir = None;
            c.runtime_name = "process".into();
        })
        .runtime(ProcessRuntime::default())
        .source("in-code", || OnePod(false))
        .on_pod_status(move |c| {
            if c.old_phase != c.new_phase {
                let phase = |p: Option<actlet::status::Phase>| p.map_or("-", |p| p.as_str());
                println!("{}: {} -> {}", c.uid, phase(c.old_phase), phase(c.new_phase));
                let _ = tx.send(phase(c.new_phase));
            }
        })
        .start()?;

    let outcome = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(phase) = phases.recv().await {
            if matches!(phase, "Succeeded" | "Failed") {
                return phase;
            }
        }
        "-"
    })
    .await;
    kubelet.shutdown(Duration::from_secs(10)).await?;
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok("Succeeded") => Ok(()),
        Ok(phase) => Err(format!("the pod ended {phase}").into()),
        Err(_) => Err("the pod did not finish within 60 s".into()),
    }
}
