//! The P2 floor: the mock alone, N pods made directly with the three CRI
//! calls the kubelet makes per pod (`--source=mock`), to tell the mock's
//! own memory and CPU from the kubelet's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actlet::cri::mock::MockRuntime;
use actlet::cri::{Runtime, v1};
use actlet::kuberuntime::RuntimeManagerConfig;
use actlet::kuberuntime::container_config::{ContainerConfigInput, generate_container_config};
use actlet::kuberuntime::sandbox_config::generate_pod_sandbox_config;
use actlet::kuberuntime::security_context::ImageUser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value};

use actlet::config::static_pod::{ManifestOrigin, load_static_pods};

use crate::common::{Figure, IMAGE, NODE, cpu_ticks, manifest, median};
use crate::mock::{Case, Result, self_cpu_pct_since, self_rss_mib};

/// The mock alone: N pods made directly with the same three calls, to
/// separate the mock's memory and CPU from the kubelet's.
pub async fn mock_only(c: &Case, mock: MockRuntime, cond: Map<String, Value>) -> Result<Vec<Figure>> {
    let cfg = Arc::new(RuntimeManagerConfig {
        pod_logs_dir: c.work_dir.join("pods"),
        container_logs_dir: None,
        node_name: NODE.into(),
        ..RuntimeManagerConfig::default()
    });
    let rt = Arc::new(mock);
    let image = rt
        .image_status(v1::ImageStatusRequest {
            image: Some(v1::ImageSpec {
                image: IMAGE.into(),
                ..Default::default()
            }),
            verbose: false,
        })
        .await?
        .image
        .ok_or("mock has no busybox")?;
    let (image_ref, user) = (image.id.clone(), actlet::kuberuntime::image::image_user(Some(&image)));
    let mut pods = Vec::with_capacity(c.pods);
    for i in 0..c.pods {
        let n = format!("p{i}");
        let origin = format!("/bench/{n}.yaml");
        let mut p = load_static_pods(&manifest(&n), ManifestOrigin::File(&origin), NODE).map_err(|e| e.reason())?;
        pods.push(p.pop().ok_or("empty manifest")?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (before, _) = self_rss_mib();
    let t0 = Instant::now();
    let results: Vec<Result<()>> = futures::stream::iter(pods)
        .map(|pod| {
            let (rt, cfg, image_ref, user) = (rt.clone(), cfg.clone(), image_ref.clone(), user.clone());
            async move { mock_pod(rt.as_ref(), &cfg, &pod, &image_ref, &user).await }
        })
        .buffer_unordered(c.pods.max(1))
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>>>()?;
    let wall = t0.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (after, hwm) = self_rss_mib();
    let cpu0 = cpu_ticks(std::process::id()).unwrap_or(0);
    let ti = Instant::now();
    // What a 1 s relist costs the mock: list everything once a second.
    let mut list_ms = vec![];
    let window = if c.idle.is_zero() {
        Duration::from_secs(5)
    } else {
        c.idle
    };
    while ti.elapsed() < window {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let tl = Instant::now();
        let _ = rt.list_pod_sandbox(v1::ListPodSandboxRequest { filter: None }).await?;
        let _ = rt.list_containers(v1::ListContainersRequest { filter: None }).await?;
        list_ms.push(tl.elapsed().as_secs_f64() * 1000.0);
    }
    let cpu = self_cpu_pct_since(cpu0, ti);
    let name = c.name();
    let f = |n: &str, unit: &str, v: f64| Figure::new(format!("{name}.{n}"), unit, v).with_all(&cond);
    Ok(vec![
        f("wall", "s", wall).with(
            "measure",
            "N x (RunPodSandbox, CreateContainer, StartContainer) directly on the mock, all at once",
        ),
        f("peak_rss", "MiB", hwm),
        f("mem_per_pod", "KiB", (after - before) * 1024.0 / c.pods as f64)
            .with("measure", "the mock's own state per pod (VmRSS delta / pods)"),
        f("list_all.p50", "ms", median(&list_ms)).with(
            "measure",
            "ListPodSandbox + ListContainers, unfiltered, on the mock: the runtime's share of a relist",
        ),
        f("idle_cpu", "%core", cpu).with("measure", "mock idle + one unfiltered list per second"),
    ])
}

async fn mock_pod(
    rt: &MockRuntime,
    cfg: &RuntimeManagerConfig,
    pod: &Pod,
    image_ref: &str,
    user: &ImageUser,
) -> Result<()> {
    let sandbox_config = generate_pod_sandbox_config(pod, 0, cfg)?;
    let sandbox_id = rt
        .run_pod_sandbox(v1::RunPodSandboxRequest {
            config: Some(sandbox_config.clone()),
            runtime_handler: String::new(),
        })
        .await?
        .pod_sandbox_id;
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .ok_or("pod without containers")?;
    let input = ContainerConfigInput {
        pod,
        container,
        restart_count: 0,
        image_ref,
        image_user: user,
        pod_ips: &[],
        mounts: vec![],
        volumes: None,
    };
    let config = generate_container_config(input, cfg)?;
    let id = rt
        .create_container(v1::CreateContainerRequest {
            pod_sandbox_id: sandbox_id,
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        })
        .await?
        .container_id;
    rt.start_container(v1::StartContainerRequest { container_id: id })
        .await?;
    Ok(())
}
