//! The churn soak (#16 item 5): N pods on the in-process mock CRI (instant),
//! then waves for a number of minutes: each wave removes the oldest `wave`
//! pods and adds `wave` new ones in one snapshot of a custom source, and
//! waits for the new ones to be Running + Ready. The kubelet's leaks upstream
//! had (k/k #73587, #108908) show here as RSS that keeps growing and as
//! per-pod records that outlive their pods.
//!
//! Figures: RSS after the fill, after the first wave and at the end (the
//! target: the end within 10 % of after the first wave), how many pods came
//! and went, the time each wave took, and — after a settling window long
//! enough for the container GC's minute — how many entries the status cache,
//! the PLEG cache, the pod lifecycle records and the mock still hold against
//! the live pods.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actlet::config::static_pod::{ManifestOrigin, load_static_pods};
use actlet::cri::SharedRuntime;
use actlet::cri::mock::MockRuntime;
use actlet::kubelet::{Kubelet, KubeletConfig, start};
use actlet::messages::PodUid;
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use crate::common::{Figure, NODE, manifest, median, percentile, reset_dir};
use crate::mock::{is_running_ready, jemalloc_mib, self_rss_mib};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// One soak.
#[derive(Clone, Debug)]
pub struct Soak {
    /// Pods alive at any time.
    pub pods: usize,
    /// Pods replaced per wave.
    pub wave: usize,
    /// How long the waves go on.
    pub duration: Duration,
    /// Pause between waves (the kubelet's periodic work runs meanwhile).
    pub pause: Duration,
    pub work_dir: PathBuf,
    /// `EventedPLEG`.
    pub evented: bool,
}

/// Pod number `i`: a unique name and origin, hence a unique UID.
fn pod(i: usize) -> Result<Arc<Pod>> {
    let n = format!("c{i}");
    let origin = format!("/bench/churn/{n}.yaml");
    let mut p = load_static_pods(&manifest(&n), ManifestOrigin::File(&origin), NODE).map_err(|e| e.reason())?;
    Ok(Arc::new(p.pop().ok_or("empty manifest")?))
}

fn uid(p: &Pod) -> PodUid {
    PodUid::new(p.metadata.uid.clone().unwrap_or_default())
}

fn send(kubelet: &Kubelet, live: &std::collections::VecDeque<Arc<Pod>>) -> Result<()> {
    kubelet.pod_config.do_send(SourceSnapshot {
        source: PodSource::Custom("bench".into()),
        pods: live.iter().cloned().collect(),
        errors: vec![],
    })?;
    Ok(())
}

/// Waits until every pod of `uids` is Running + Ready (polled every 50 ms);
/// false at the deadline.
async fn wait_running(kubelet: &Kubelet, mut uids: Vec<PodUid>, deadline: Duration) -> bool {
    let t0 = Instant::now();
    while !uids.is_empty() && t0.elapsed() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        uids.retain(|u| !kubelet.statuses.status(u).is_some_and(|s| is_running_ready(&s)));
    }
    uids.is_empty()
}

/// Entries each per-pod table holds.
fn tables(kubelet: &Kubelet, mock: &MockRuntime) -> [(&'static str, usize); 6] {
    let snap = mock.snapshot();
    [
        ("pod_manager", kubelet.pods.len()),
        ("status_cache", kubelet.statuses.len()),
        ("pleg_cache", kubelet.cache.len()),
        ("pod_sync_statuses", kubelet.pod_sync_statuses.len()),
        ("mock_sandboxes", snap.sandboxes.len()),
        ("mock_containers", snap.containers.len()),
    ]
}

/// The `churn` subcommand: one soak in this process; prints `FIGURES <json>`.
pub async fn run(s: Soak) -> Result<Vec<Figure>> {
    reset_dir(&s.work_dir)?;
    let log = std::fs::File::create(s.work_dir.join("kubelet.log"))?;
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn,actlet=info"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(log))
        .init();
    let mock = MockRuntime::new();
    let clear = mock.clone();
    actix_rt::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            clear.clear_calls();
        }
    });
    let mut config = KubeletConfig::new(NODE);
    config.root_dir = s.work_dir.join("kubelet");
    config.pod_logs_dir = s.work_dir.join("pods");
    config.container_logs_dir = None;
    config.max_pods = (s.pods + s.wave) as i64 + 10;
    config.evented_pleg = s.evented;
    config.custom_sources = vec!["bench".into()];
    let runtime: SharedRuntime = Arc::new(mock.clone());
    let kubelet = start(config, runtime)?;

    let mut next = 0;
    let mut live = std::collections::VecDeque::with_capacity(s.pods + s.wave);
    for _ in 0..s.pods {
        live.push_back(pod(next)?);
        next += 1;
    }
    let t0 = Instant::now();
    send(&kubelet, &live)?;
    if !wait_running(
        &kubelet,
        live.iter().map(|p| uid(p)).collect(),
        Duration::from_secs(600),
    )
    .await
    {
        return Err(format!("{} pods not Running within 600 s", s.pods).into());
    }
    let fill = t0.elapsed().as_secs_f64();
    eprintln!("    churn: {} pods Running in {fill:.1} s", s.pods);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_fill, _) = self_rss_mib();

    let mut wave_secs = vec![];
    let mut rss_first = None;
    let mut rss_samples = vec![];
    let mut heap_first = None;
    // Steady state comes after the deleted pods' grace periods (the busybox
    // `sleep` ignores SIGTERM: 30 s) and a few container GC minutes.
    let warmup = (s.duration / 3).min(Duration::from_secs(300));
    let mut rss_warm = None;
    let started = Instant::now();
    while started.elapsed() < s.duration {
        let tw = Instant::now();
        let mut added = Vec::with_capacity(s.wave);
        for _ in 0..s.wave {
            live.pop_front();
            let p = pod(next)?;
            next += 1;
            added.push(uid(&p));
            live.push_back(p);
        }
        send(&kubelet, &live)?;
        if !wait_running(&kubelet, added, Duration::from_secs(300)).await {
            return Err(format!("wave {}: new pods not Running within 300 s", wave_secs.len() + 1).into());
        }
        let took = tw.elapsed().as_secs_f64();
        if took > 30.0 {
            eprintln!("    churn: wave {} took {took:.0} s", wave_secs.len() + 1);
        }
        wave_secs.push(took);
        tokio::time::sleep(s.pause).await;
        let (rss, _) = self_rss_mib();
        if rss_first.is_none() {
            heap_first = jemalloc_mib();
        }
        rss_first.get_or_insert(rss);
        if started.elapsed() >= warmup {
            rss_warm.get_or_insert(rss);
        }
        rss_samples.push(rss);
        if wave_secs.len() % 20 == 0 {
            eprintln!(
                "    churn: {} waves, {:.0} s, RSS {rss:.0} MiB",
                wave_secs.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let churn_secs = started.elapsed().as_secs_f64();
    // Terminated pods' records go at housekeeping (2 s), their sandboxes at
    // the container GC (every minute): settle for longer than both.
    tokio::time::sleep(Duration::from_secs(75)).await;
    let (rss_end, hwm) = self_rss_mib();
    let heap_end = jemalloc_mib();
    let held = tables(&kubelet, &mock);
    let rss_first = rss_first.unwrap_or(rss_fill);
    let growth = (rss_end - rss_first) / rss_first * 100.0;
    let rss_warm = rss_warm.unwrap_or(rss_first);
    let growth_warm = (rss_end - rss_warm) / rss_warm * 100.0;

    let name = format!("churn.n{}.wave{}", s.pods, s.wave);
    let cond = json!({
        "pods": s.pods, "wave": s.wave, "minutes": s.duration.as_secs_f64() / 60.0,
        "pause_between_waves_s": s.pause.as_secs_f64(), "evented_pleg": s.evented,
        "runtime": "MockRuntime in-process, instant", "source": "custom (one SourceSnapshot per wave)",
    });
    let cond = cond.as_object().cloned().unwrap_or_default();
    let f = |n: &str, unit: &str, v: f64| Figure::new(format!("{name}.{n}"), unit, v).with_all(&cond);
    let mut out = vec![
        f("fill_wall", "s", fill).with("measure", "first snapshot -> every pod Running + Ready"),
        f("rss_after_fill", "MiB", rss_fill),
        f("rss_after_first_wave", "MiB", rss_first),
        f("rss_end", "MiB", rss_end).with("measure", "VmRSS after the last wave and a 75 s settle"),
        f("rss_growth", "%", growth)
            .with("measure", "(rss_end - rss_after_first_wave) / rss_after_first_wave")
            .target_max(10.0, "<= 10 %"),
        f("rss_after_warmup", "MiB", rss_warm).with("warmup_s", warmup.as_secs()),
        f("rss_growth_after_warmup", "%", growth_warm)
            .with(
                "measure",
                "(rss_end - rss_after_warmup) / rss_after_warmup: growth once terminating and dead-but-not-collected pods reached their steady state",
            )
            .target_max(10.0, "<= 10 %"),
        f("rss_max_during_waves", "MiB", rss_samples.iter().copied().fold(0.0, f64::max)),
        f("peak_rss", "MiB", hwm).with("measure", "VmHWM of the whole process (kubelet + mock + bench)"),
        f("waves", "waves", wave_secs.len() as f64).with("churn_s", churn_secs),
        f("pods_churned", "pods", (wave_secs.len() * s.wave) as f64),
        f("wave.p50", "s", median(&wave_secs)).with("measure", "snapshot sent -> the wave's new pods Running"),
        f("wave.p99", "s", percentile(&wave_secs, 99.0)),
    ];
    // Where the RSS growth is: the program's live heap (`allocated`), pages
    // it fragments (`active` - `allocated`), or free pages the allocator
    // has not returned yet (`resident` - `active`).
    for (when, heap) in [("after_first_wave", heap_first), ("end", heap_end)] {
        for (stat, mib) in heap.into_iter().flatten() {
            out.push(
                f(&format!("jemalloc.{stat}_{when}"), "MiB", mib)
                    .with("measure", format!("jemalloc stats.{stat}, taken with rss_{when}")),
            );
        }
    }
    for (table, n) in held {
        out.push(
            f(&format!("held.{table}"), "entries", n as f64)
                .with("live_pods", s.pods)
                .with(
                    "measure",
                    "entries after the settle; a leak shows as more than live_pods",
                ),
        );
    }
    Ok(out)
}
