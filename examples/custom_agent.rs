//! A custom node agent: actlet's actor system with an in-code pod source and
//! the mock runtime. Prints every pod phase transition, waits until the web
//! pod runs and the job has completed, then shuts down gracefully.
//!
//! `cargo run --example custom_agent`

use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::{ActletBuilder, PodSource, SourceError};
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::mpsc;

/// Our own source: one snapshot of two pods, then nothing changes.
struct InCode {
    sent: bool,
}

#[async_trait::async_trait]
impl PodSource for InCode {
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
        if std::mem::replace(&mut self.sent, true) {
            std::future::pending::<()>().await;
        }
        let pod = |name: &str, restart: &str, script: &str| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "uid": format!("uid-{name}")},
                "spec": {"restartPolicy": restart, "containers": [
                    {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script]}]}
            }))
            .map_err(|e| SourceError(e.to_string()))
        };
        Ok(vec![
            pod("web", "Always", "sleep 3600")?,
            pod("job", "Never", "echo done")?,
        ])
    }
}

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("custom-agent-{}", std::process::id()));
    let (tx, mut phases) = mpsc::unbounded_channel();
    let kubelet = ActletBuilder::new("agent-node")
        .configure(|c| {
            c.root_dir = dir.join("root");
            c.pod_logs_dir = dir.join("logs");
            c.container_logs_dir = None;
        })
        .runtime(MockRuntime::new())
        .source("in-code", || InCode { sent: false })
        .on_pod_status(move |c| {
            if c.old_phase != c.new_phase {
                let phase = |p: Option<actlet::status::Phase>| p.map_or("-", |p| p.as_str());
                println!("{}: {} -> {}", c.uid, phase(c.old_phase), phase(c.new_phase));
                let _ = tx.send((c.uid.to_string(), phase(c.new_phase)));
            }
        })
        .start()?;

    let (mut web_running, mut job_done) = (false, false);
    let deadline = tokio::time::sleep(Duration::from_secs(30));
    tokio::pin!(deadline);
    while !(web_running && job_done) {
        tokio::select! {
            Some((uid, phase)) = phases.recv() => {
                web_running |= uid == "uid-web" && phase == "Running";
                job_done |= uid == "uid-job" && phase == "Succeeded";
            }
            () = &mut deadline => return Err("pods did not reach Running/Succeeded within 30 s".into()),
        }
    }
    let report = kubelet.shutdown(Duration::from_secs(10)).await?;
    println!("stopped {} actors gracefully", report.stopped.len());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
