//! Load on the kubelet API must not delay pod starts: 200 concurrent `/pods`
//! and `/stats/summary` requests (half each) in waves and 20 concurrent `/containerLogs?follow` streams
//! while 20 pods start, against the same start without load. A bench
//! figure, not a timed test: run by hand with
//! `cargo test --release --test server_load -- --ignored --nocapture`.

#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use kubelet_api::https;

const WAIT: Duration = Duration::from_secs(120);

fn pods(prefix: &str, n: usize) -> Vec<k8s_openapi::api::core::v1::Pod> {
    (0..n)
        .map(|i| {
            PodBuilder::new(format!("{prefix}-{i}"))
                .container("c", "busybox:1.36", ["sh", "-c", "echo up; sleep 3600"])
                .build()
        })
        .collect()
}

async fn start_all(node: &TestNode, keep: Vec<k8s_openapi::api::core::v1::Pod>, prefix: &str, n: usize) -> Duration {
    let started = Instant::now();
    let mut all = keep;
    all.extend(pods(prefix, n));
    node.set_pods(all);
    let k = node.kubelet().clone();
    let prefix = prefix.to_string();
    wait_until(
        move || (0..n).all(|i| k.phase_of_named("default", &format!("{prefix}-{i}")).as_deref() == Some("Running")),
        WAIT,
    )
    .await
    .unwrap();
    started.elapsed()
}

#[test]
#[ignore = "bench figure; run by hand"]
fn api_load_does_not_delay_pod_starts() {
    TestSystem::real_time().block_on(async {
        let node = TestNode::builder()
            .customize(|b| b.configure(|c| c.server_addr = Some("127.0.0.1:0".parse().unwrap())))
            .start();
        let addrs = node.kubelet().api_addrs.clone();
        wait_until(|| !addrs.get().is_empty(), WAIT).await.unwrap();
        let addr = addrs.get()[0];
        let quiet = start_all(&node, vec![], "quiet", 20).await;

        let base = pods("quiet", 20);
        let stop = Arc::new(AtomicBool::new(false));
        let (requests, lines) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        // the load runs on threads of its own, as real clients would
        let (st, rq, ln) = (stop.clone(), requests.clone(), lines.clone());
        let load = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut tasks = vec![];
                for _ in 0..20 {
                    let (stop, lines) = (st.clone(), ln.clone());
                    tasks.push(tokio::spawn(async move {
                        let mut resp = https(None)
                            .get(format!("https://{addr}/containerLogs/default/quiet-0/c?follow=true"))
                            .send()
                            .await
                            .unwrap();
                        while !stop.load(Ordering::SeqCst) {
                            match tokio::time::timeout(Duration::from_millis(200), resp.chunk()).await {
                                Ok(Ok(Some(_))) => {
                                    lines.fetch_add(1, Ordering::SeqCst);
                                }
                                Ok(_) => break,
                                Err(_) => {}
                            }
                        }
                    }));
                }
                let client = https(None);
                for i in 0..200 {
                    let (stop, requests, client) = (st.clone(), rq.clone(), client.clone());
                    let path = if i % 2 == 0 { "/pods" } else { "/stats/summary" };
                    tasks.push(tokio::spawn(async move {
                        while !stop.load(Ordering::SeqCst) {
                            let r = client.get(format!("https://{addr}{path}")).send().await.unwrap();
                            assert_eq!(r.status().as_u16(), 200);
                            let _ = r.bytes().await.unwrap();
                            requests.fetch_add(1, Ordering::SeqCst);
                        }
                    }));
                }
                for t in tasks {
                    t.await.unwrap();
                }
            })
        });
        // steady state first: every stream open and the request loops going
        let (l, r) = (lines.clone(), requests.clone());
        let warm = Instant::now();
        wait_until(
            move || l.load(Ordering::SeqCst) == 20 && r.load(Ordering::SeqCst) >= 400,
            WAIT,
        )
        .await
        .unwrap();
        println!("load established in {:?}", warm.elapsed());
        let before = requests.load(Ordering::SeqCst);
        let loaded = start_all(&node, base, "loaded", 20).await;
        let during = requests.load(Ordering::SeqCst) - before;
        stop.store(true, Ordering::SeqCst);
        load.join().unwrap();
        println!(
            "20 pods to Running: {quiet:?} quiet, {loaded:?} under load ({during} /pods and /stats/summary answered meanwhile, \
             {:.0}/s; 20 follow streams got {} chunks)",
            during as f64 / loaded.as_secs_f64(),
            lines.load(Ordering::SeqCst)
        );
        assert_eq!(
            lines.load(Ordering::SeqCst),
            20,
            "each follow stream got the pod's one line"
        );
    });
}
