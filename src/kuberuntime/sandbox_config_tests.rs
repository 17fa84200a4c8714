use super::*;
use crate::cri::v1::NamespaceMode;
use crate::kuberuntime::test_support::pod;

fn cfg() -> RuntimeManagerConfig {
    RuntimeManagerConfig {
        pod_logs_dir: PathBuf::from("/logs"),
        cluster_dns: vec!["10.96.0.10".into()],
        cluster_domain: "cluster.local".into(),
        ..Default::default()
    }
}

const WEB: &str = r#"
metadata:
  name: web
  namespace: prod
  uid: u-1
  labels: {app: web}
  annotations: {kubernetes.io/config.source: file}
spec:
  securityContext:
    sysctls: [{name: net.core.somaxconn, value: "1024"}, {name: kernel/shm_rmid_forced, value: "1"}]
  containers:
  - name: nginx
    resources: {requests: {cpu: 100m}}
    ports:
    - {name: http, containerPort: 80, hostPort: 8080}
    - {name: http, containerPort: 81}
    - {containerPort: 53, protocol: UDP}
    - {containerPort: 9000, protocol: SCTP, hostIP: "::1", hostPort: 9000}
"#;

#[test]
fn sandbox_config_has_metadata_labels_logs_and_cgroup() {
    let c = generate_pod_sandbox_config(&pod(WEB), 2, &cfg()).unwrap_or_else(|e| panic!("{e}"));
    let meta = c.metadata.clone().unwrap_or_default();
    assert_eq!(
        (
            meta.name.as_str(),
            meta.namespace.as_str(),
            meta.uid.as_str(),
            meta.attempt
        ),
        ("web", "prod", "u-1", 2)
    );
    assert_eq!(c.hostname, "web");
    assert_eq!(c.log_directory, "/logs/prod_web_u-1");
    assert_eq!(c.labels["io.kubernetes.pod.uid"], "u-1");
    assert_eq!(c.labels["app"], "web");
    assert_eq!(c.annotations["kubernetes.io/config.source"], "file");
    let linux = c.linux.unwrap_or_default();
    assert_eq!(linux.cgroup_parent, "/kubepods/burstable/podu-1");
    assert_eq!(linux.sysctls["net.core.somaxconn"], "1024");
    assert_eq!(linux.sysctls["kernel.shm_rmid_forced"], "1");
    let sc = linux.security_context.unwrap_or_default();
    assert_eq!(sc.namespace_options.map(|o| o.pid()), Some(NamespaceMode::Container));
    assert!(!sc.privileged);
    assert_eq!(c.dns_config.map(|d| d.servers), Some(vec!["10.96.0.10".to_string()]));
}

#[test]
fn port_mappings_follow_make_port_mappings() {
    let m = port_mappings(&pod(WEB));
    let summary: Vec<_> = m
        .iter()
        .map(|p| (p.protocol(), p.container_port, p.host_port, p.host_ip.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (Protocol::Tcp, 80, 8080, ""),
            (Protocol::Udp, 53, 0, ""),
            (Protocol::Sctp, 9000, 9000, "::1")
        ],
        "the second port named http is dropped"
    );
}

#[test]
fn host_network_pods_have_no_hostname_and_node_network() {
    let p = pod(
        "metadata: {name: hn, namespace: d, uid: u}\nspec: {hostNetwork: true, hostname: custom, containers: [{name: c}]}",
    );
    let c = generate_pod_sandbox_config(&p, 0, &cfg()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.hostname, "");
    let ns = c
        .linux
        .clone()
        .and_then(|l| l.security_context)
        .and_then(|s| s.namespace_options)
        .unwrap_or_default();
    assert_eq!(ns.network(), NamespaceMode::Node);
    assert_eq!(
        c.linux.map(|l| l.cgroup_parent),
        Some("/kubepods/besteffort/podu".into())
    );
}

#[test]
fn hostname_comes_from_spec_hostname_and_subdomain() {
    let p = pod("metadata: {name: web-0, namespace: prod}\nspec: {hostname: db, subdomain: svc1, containers: []}");
    assert_eq!(
        pod_hostname_and_domain(&p, "cluster.local"),
        Ok(("db".into(), "svc1.prod.svc.cluster.local".into()))
    );
    assert_eq!(sandbox_hostname(&p, "cluster.local"), Ok("db".into()));
    let fqdn = pod(
        "metadata: {name: web-0, namespace: prod}\nspec: {hostname: db, subdomain: svc1, setHostnameAsFQDN: true, containers: []}",
    );
    assert_eq!(
        sandbox_hostname(&fqdn, "cluster.local"),
        Ok("db.svc1.prod.svc.cluster.local".into())
    );
}

#[test]
fn invalid_hostnames_are_rejected_and_long_ones_truncated() {
    let bad = pod("metadata: {name: p}\nspec: {hostname: Bad_Host, containers: []}");
    assert_eq!(
        sandbox_hostname(&bad, ""),
        Err(SandboxConfigError::InvalidHostname("Bad_Host".into()))
    );
    let bad_sub = pod("metadata: {name: p}\nspec: {subdomain: '-x', containers: []}");
    assert_eq!(
        sandbox_hostname(&bad_sub, ""),
        Err(SandboxConfigError::InvalidSubdomain("-x".into()))
    );
    let long_name = format!("{}-{}", "a".repeat(62), "b".repeat(10));
    let long = pod(&format!("metadata: {{name: {long_name}}}\nspec: {{containers: []}}"));
    assert_eq!(
        sandbox_hostname(&long, ""),
        Ok("a".repeat(62)),
        "cut at 63 then the trailing '-' trimmed"
    );
    let fqdn = pod(&format!(
        "metadata: {{name: p, namespace: {}}}\nspec: {{hostname: h, subdomain: s, setHostnameAsFQDN: true, containers: []}}",
        "n".repeat(50)
    ));
    assert!(matches!(
        sandbox_hostname(&fqdn, "cluster.local"),
        Err(SandboxConfigError::FqdnTooLong(_))
    ));
}

#[test]
fn dns1123_labels() {
    for ok in ["a", "web-0", "0a", &"x".repeat(63)] {
        assert!(is_dns1123_label(ok), "{ok}");
    }
    for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"x".repeat(64)] {
        assert!(!is_dns1123_label(bad), "{bad}");
    }
}

#[test]
fn guaranteed_pods_sit_directly_under_kubepods_and_privileged_makes_a_privileged_sandbox() {
    let p = pod("metadata: {name: g, namespace: d, uid: u9}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: '1', memory: 1Gi}}
    securityContext: {privileged: true}");
    let linux = generate_pod_sandbox_config(&p, 0, &cfg())
        .unwrap_or_else(|e| panic!("{e}"))
        .linux
        .unwrap_or_default();
    assert_eq!(linux.cgroup_parent, "/kubepods/podu9");
    assert!(linux.security_context.is_some_and(|s| s.privileged));
}

#[test]
fn sysctl_names_convert_slashes_to_dots() {
    assert_eq!(
        crate::sysctl::normalize_name("kernel/shm_rmid_forced"),
        "kernel.shm_rmid_forced"
    );
    assert_eq!(
        crate::sysctl::normalize_name("net/ipv4/conf/eno2.100/rp_filter"),
        "net.ipv4.conf.eno2/100.rp_filter"
    );
    assert_eq!(
        crate::sysctl::normalize_name("net.ipv4.conf.eno2/100.rp_filter"),
        "net.ipv4.conf.eno2/100.rp_filter"
    );
    assert_eq!(crate::sysctl::normalize_name("plain"), "plain");
}

#[test]
fn log_directory_is_namespace_name_uid() {
    assert_eq!(
        pod_log_directory(Path::new("/var/log/pods"), "ns", "n", "u"),
        PathBuf::from("/var/log/pods/ns_n_u")
    );
}

#[test]
fn hostname_override_is_the_hostname_without_a_domain() {
    let p = pod(
        "metadata: {name: web-0, namespace: prod}\nspec: {hostname: db, subdomain: svc1, hostnameOverride: box.example.org, containers: []}",
    );
    assert_eq!(
        pod_hostname_and_domain(&p, "cluster.local"),
        Ok(("box.example.org".into(), String::new()))
    );
    assert_eq!(sandbox_hostname(&p, "cluster.local"), Ok("box.example.org".into()));
    let bad = pod("metadata: {name: p}\nspec: {hostnameOverride: Not_A_Name, containers: []}");
    assert_eq!(
        sandbox_hostname(&bad, ""),
        Err(SandboxConfigError::InvalidHostnameOverride("Not_A_Name".into()))
    );
}
