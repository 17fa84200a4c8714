//! Figures computed from other figures of the same run: the P2 kubelet
//! cases beside the mock-alone floor (issue #16: "10,000 pods to Running
//! ≤ 2 s and ≤ 1.3× the mock-alone floor of the same run; kubelet RSS ≤ 150
//! MiB at 10k").
//!
//! The P2 cases run the kubelet and the mock in one process, so their RSS
//! holds the mock's state too. The mock-alone case (`p2.mock.instant.nN`)
//! makes the same N pods straight on the mock in a process of its own; its
//! `mem_per_pod` is the mock's state per pod. The kubelet's share of a case
//! is its RSS after the pods run minus that state: what the kubelet process
//! would hold with the runtime out of process (the harness's few MiB stay
//! in, so it is an upper bound).

use std::collections::HashMap;

use crate::common::Figure;

/// Pods at which the targets apply.
const TARGET_PODS: u64 = 10_000;

/// For every instant-mock kubelet case with a mock-alone case of the same
/// size: `wall_vs_mock_floor` (×), `kubelet_rss` and `kubelet_rss_settled`
/// (MiB) and `kubelet_mem_per_pod` (KiB).
pub fn p2(figures: &[Figure]) -> Vec<Figure> {
    let by_name: HashMap<&str, &Figure> = figures.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut out = vec![];
    for wall in figures.iter().filter(|f| f.name.ends_with(".wall")) {
        let case = wall.name.trim_end_matches(".wall");
        let Some(pods) = kubelet_case_pods(case) else {
            continue;
        };
        let floor = format!("p2.mock.instant.n{pods}");
        let (Some(floor_wall), Some(floor_mem)) = (
            by_name.get(format!("{floor}.wall").as_str()),
            by_name.get(format!("{floor}.mem_per_pod").as_str()),
        ) else {
            continue;
        };
        let targets = pods >= TARGET_PODS && !wall.conditions.contains_key("incomplete");
        let mut ratio = Figure::new(
            format!("{case}.wall_vs_mock_floor"),
            "x",
            wall.value / floor_wall.value.max(1e-9),
        )
        .with(
            "measure",
            "this case's wall / the mock-alone wall of the same N, same run",
        )
        .floor(floor_wall.value, &format!("{floor}.wall (s)"));
        if targets {
            ratio = ratio.target_max(1.3, "<= 1.3 x mock alone");
        }
        out.push(ratio);

        let field = |n: &str| by_name.get(format!("{case}.{n}").as_str()).map(|f| f.value);
        let (Some(rss_after), Some(per_pod)) = (field("rss_after"), field("mem_per_pod")) else {
            continue;
        };
        let mock_state_mib = floor_mem.value * pods as f64 / 1024.0;
        // The kubelet's RSS: a whole-process RSS minus the mock's state.
        let kubelet_rss = |name: &str, rss: f64, measure: &str| {
            let f = Figure::new(format!("{case}.{name}"), "MiB", (rss - mock_state_mib).max(0.0))
                .with("measure", measure)
                .with("mock_state_mib", mock_state_mib);
            if targets { f.target_max(150.0, "<= 150 MiB") } else { f }
        };
        out.push(kubelet_rss(
            "kubelet_rss",
            rss_after,
            "VmRSS with every pod running minus the mock's own state (mock-alone mem_per_pod x N, same run)",
        ));
        if let Some(settled) = field("rss_settled") {
            out.push(kubelet_rss(
                "kubelet_rss_settled",
                settled,
                "VmRSS at the end of the idle window minus the mock's own state (as kubelet_rss)",
            ));
        }
        out.push(
            Figure::new(
                format!("{case}.kubelet_mem_per_pod"),
                "KiB",
                (per_pod - floor_mem.value).max(0.0),
            )
            .with(
                "measure",
                "(kubelet + mock) per pod minus the mock alone per pod, same run",
            )
            .floor(floor_mem.value, &format!("{floor}.mem_per_pod (KiB)")),
        );
    }
    out
}

/// The pod count of a kubelet case on the instant mock (`p2.<file|custom>.instant.nN…`).
fn kubelet_case_pods(case: &str) -> Option<u64> {
    let mut parts = case.split('.');
    let (p2, source, latency, n) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if p2 != "p2" || source == "mock" || latency != "instant" {
        return None;
    }
    n.strip_prefix('n')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(name: &str, v: f64) -> Figure {
        Figure::new(name, "", v)
    }

    #[test]
    fn kubelet_cases_are_compared_with_the_mock_alone_of_their_size() {
        let figures = [
            fig("p2.file.instant.n10000.evented.wall", 6.0),
            fig("p2.file.instant.n10000.evented.rss_after", 600.0),
            fig("p2.file.instant.n10000.evented.mem_per_pod", 60.0),
            fig("p2.file.instant.n10000.evented.rss_settled", 520.0),
            fig("p2.file.real_lat.n10000.wall", 90.0),
            fig("p2.mock.instant.n10000.wall", 1.0),
            fig("p2.mock.instant.n10000.mem_per_pod", 35.0),
            fig("p2.file.instant.n1000.wall", 1.0),
        ];
        let out = p2(&figures);
        let get = |n: &str| out.iter().find(|f| f.name == n).map(|f| f.value);
        assert_eq!(get("p2.file.instant.n10000.evented.wall_vs_mock_floor"), Some(6.0));
        let mock_mib = 35.0 * 10_000.0 / 1024.0;
        assert_eq!(
            get("p2.file.instant.n10000.evented.kubelet_rss"),
            Some(600.0 - mock_mib)
        );
        assert_eq!(get("p2.file.instant.n10000.evented.kubelet_mem_per_pod"), Some(25.0));
        assert_eq!(
            get("p2.file.instant.n10000.evented.kubelet_rss_settled"),
            Some(520.0 - mock_mib)
        );
        assert_eq!(out.len(), 4, "no floor for 1k, no figure for the real-latency case");
        assert!(out.iter().all(|f| f.met() == Some(false) || f.met().is_none()));
    }
}
