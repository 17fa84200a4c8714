use super::*;
use crate::kuberuntime::test_support::pod;

const RESOLV: &str = "# generated\nnameserver 192.168.1.1\nnameserver 8.8.8.8\nsearch old.example\nsearch corp.example. lab.example .\noptions ndots:2 timeout:1\noptions ndots:3 rotate\n";

fn cfg() -> RuntimeManagerConfig {
    RuntimeManagerConfig {
        cluster_dns: vec!["10.96.0.10".into()],
        cluster_domain: "cluster.local".into(),
        host_dns: Some(HostDns::parse(RESOLV)),
        node_ips: vec!["192.168.1.10".into()],
        ..Default::default()
    }
}

fn dns_for(spec: &str, cfg: &RuntimeManagerConfig) -> DnsConfig {
    pod_dns_config(
        &pod(&format!("metadata: {{name: p, namespace: prod}}\nspec: {spec}")),
        cfg,
    )
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn resolv_conf_parses_like_upstream() {
    let h = HostDns::parse(RESOLV);
    assert_eq!(h.servers, strs(&["192.168.1.1", "8.8.8.8"]));
    assert_eq!(
        h.searches,
        strs(&["corp.example", "lab.example"]),
        "last search line wins, dots trimmed"
    );
    assert_eq!(h.options, strs(&["ndots:3", "timeout:1", "rotate"]));
    assert_eq!(HostDns::parse(""), HostDns::default());
    assert_eq!(
        HostDns::parse("nameserver\n  # nameserver 1.1.1.1\n").servers,
        Vec::<String>::new()
    );
}

#[test]
fn cluster_first_uses_cluster_dns_and_search_paths() {
    let d = dns_for("{containers: []}", &cfg());
    assert_eq!(d.servers, strs(&["10.96.0.10"]));
    assert_eq!(
        d.searches,
        strs(&[
            "prod.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
            "corp.example",
            "lab.example"
        ])
    );
    assert_eq!(d.options, strs(&["ndots:5"]));
}

#[test]
fn cluster_first_without_cluster_domain_keeps_host_searches() {
    let c = RuntimeManagerConfig {
        cluster_domain: String::new(),
        ..cfg()
    };
    let d = dns_for("{dnsPolicy: ClusterFirst, containers: []}", &c);
    assert_eq!(d.servers, strs(&["10.96.0.10"]));
    assert_eq!(d.searches, strs(&["corp.example", "lab.example"]));
}

#[test]
fn cluster_first_on_host_network_falls_back_to_default() {
    let d = dns_for("{hostNetwork: true, containers: []}", &cfg());
    assert_eq!(d.servers, strs(&["192.168.1.1", "8.8.8.8"]));
    assert_eq!(d.options, strs(&["ndots:3", "timeout:1", "rotate"]));
}

#[test]
fn cluster_first_with_host_net_uses_cluster_dns() {
    let d = dns_for(
        "{hostNetwork: true, dnsPolicy: ClusterFirstWithHostNet, containers: []}",
        &cfg(),
    );
    assert_eq!(d.servers, strs(&["10.96.0.10"]));
}

#[test]
fn cluster_policy_without_cluster_dns_falls_back_to_default() {
    let c = RuntimeManagerConfig {
        cluster_dns: vec![],
        ..cfg()
    };
    let d = dns_for("{containers: []}", &c);
    assert_eq!(d.servers, strs(&["192.168.1.1", "8.8.8.8"]));
    assert_eq!(d.searches, strs(&["corp.example", "lab.example"]));
}

#[test]
fn default_policy_uses_the_host_resolver() {
    let d = dns_for("{dnsPolicy: Default, containers: []}", &cfg());
    assert_eq!(d.servers, strs(&["192.168.1.1", "8.8.8.8"]));
    assert_eq!(d.searches, strs(&["corp.example", "lab.example"]));
}

#[test]
fn default_policy_with_empty_resolv_conf_setting_uses_localhost() {
    let c = RuntimeManagerConfig {
        host_dns: None,
        node_ips: vec!["192.168.1.10".into(), "fd00::1".into()],
        ..cfg()
    };
    let d = dns_for("{dnsPolicy: Default, containers: []}", &c);
    assert_eq!(d.servers, strs(&["127.0.0.1", "::1"]));
    assert_eq!(d.searches, strs(&["."]));
    let c = RuntimeManagerConfig { node_ips: vec![], ..c };
    assert_eq!(
        dns_for("{dnsPolicy: Default, containers: []}", &c).servers,
        strs(&["127.0.0.1"])
    );
}

#[test]
fn none_policy_uses_only_dns_config() {
    let d = dns_for(
        "{dnsPolicy: None, dnsConfig: {nameservers: [1.1.1.1], searches: [a.example], options: [{name: ndots, value: '1'}, {name: edns0}]}, containers: []}",
        &cfg(),
    );
    assert_eq!(d.servers, strs(&["1.1.1.1"]));
    assert_eq!(d.searches, strs(&["a.example"]));
    assert_eq!(d.options, strs(&["ndots:1", "edns0"]));
    assert_eq!(
        dns_for("{dnsPolicy: None, containers: []}", &cfg()),
        DnsConfig::default()
    );
}

#[test]
fn dns_config_merges_into_the_policy_base_without_duplicates() {
    let d = dns_for(
        "{dnsConfig: {nameservers: [10.96.0.10, 9.9.9.9], searches: [svc.cluster.local, x.example], options: [{name: ndots, value: '2'}]}, containers: []}",
        &cfg(),
    );
    assert_eq!(d.servers, strs(&["10.96.0.10", "9.9.9.9"]));
    assert_eq!(d.searches.last().map(String::as_str), Some("x.example"));
    assert_eq!(d.searches.iter().filter(|s| *s == "svc.cluster.local").count(), 1);
    assert_eq!(d.options, strs(&["ndots:2"]));
}

#[test]
fn limits_cut_nameservers_and_search_paths() {
    let many: Vec<String> = (0..40).map(|i| format!("d{i}.example")).collect();
    let long = "x".repeat(254);
    let d = dns_for(
        &format!(
            "{{dnsPolicy: None, dnsConfig: {{nameservers: [1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4], searches: [{long}, {}]}}, containers: []}}",
            many.join(", ")
        ),
        &cfg(),
    );
    assert_eq!(d.servers.len(), 3);
    assert_eq!(d.searches.len(), 31, "32 kept, then the 254-char one dropped");
    let wide: Vec<String> = (0..20).map(|i| format!("{i:0>120}")).collect();
    let d = dns_for(
        &format!(
            "{{dnsPolicy: None, dnsConfig: {{searches: [{}]}}, containers: []}}",
            wide.join(", ")
        ),
        &cfg(),
    );
    assert!(d.searches.join(" ").len() <= MAX_DNS_SEARCH_LIST_CHARS);
    assert_eq!(d.searches.len(), 16);
}

#[test]
fn dns_types_follow_policy_and_host_network() {
    let t = |spec: &str| pod_dns_type(&pod(&format!("metadata: {{name: p}}\nspec: {spec}")));
    assert_eq!(t("{containers: []}"), PodDnsType::Cluster);
    assert_eq!(t("{dnsPolicy: Default, containers: []}"), PodDnsType::Host);
    assert_eq!(t("{dnsPolicy: None, containers: []}"), PodDnsType::None);
    assert_eq!(t("{hostNetwork: true, containers: []}"), PodDnsType::Host);
    assert_eq!(
        t("{hostNetwork: true, dnsPolicy: ClusterFirstWithHostNet, containers: []}"),
        PodDnsType::Cluster
    );
    assert_eq!(t("{dnsPolicy: Bogus, containers: []}"), PodDnsType::Cluster);
}
