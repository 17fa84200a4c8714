use std::path::PathBuf;

use super::*;
use crate::kuberuntime::test_support::pod;

fn first(p: &Pod) -> &Container {
    &p.spec.as_ref().unwrap().containers[0]
}

fn ns(p: &Pod) -> (NamespaceMode, NamespaceMode, NamespaceMode) {
    let o = namespace_options(p);
    (o.network(), o.pid(), o.ipc())
}

#[test]
fn namespaces_default_to_pod_network_and_ipc_and_container_pid() {
    let p = pod("metadata: {name: p}\nspec: {containers: [{name: c}]}");
    assert_eq!(
        ns(&p),
        (NamespaceMode::Pod, NamespaceMode::Container, NamespaceMode::Pod)
    );
}

#[test]
fn host_namespaces_map_to_node() {
    let p =
        pod("metadata: {name: p}\nspec: {hostNetwork: true, hostPID: true, hostIPC: true, containers: [{name: c}]}");
    assert_eq!(ns(&p), (NamespaceMode::Node, NamespaceMode::Node, NamespaceMode::Node));
}

#[test]
fn share_process_namespace_uses_the_pod_pid_namespace() {
    let p = pod("metadata: {name: p}\nspec: {shareProcessNamespace: true, containers: [{name: c}]}");
    assert_eq!(ns(&p).1, NamespaceMode::Pod);
}

#[test]
fn a_privileged_init_or_regular_container_makes_the_sandbox_privileged() {
    let plain = pod("metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {privileged: false}}]}");
    assert!(!has_privileged_container(&plain));
    assert!(!sandbox_security_context(&plain).privileged);
    let init = pod(
        "metadata: {name: p}\nspec: {initContainers: [{name: i, securityContext: {privileged: true}}], containers: [{name: c}]}",
    );
    assert!(sandbox_security_context(&init).privileged);
}

#[test]
fn sandbox_security_context_carries_pod_identity_and_profiles() {
    let p = pod("metadata: {name: p}
spec:
  hostNetwork: true
  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000], seLinuxOptions: {level: 's0:c1'}}
  containers: [{name: c}]");
    let sc = sandbox_security_context(&p);
    assert_eq!(sc.run_as_user, Some(Int64Value { value: 1000 }));
    assert_eq!(sc.run_as_group, Some(Int64Value { value: 3000 }));
    assert_eq!(sc.supplemental_groups, vec![2000, 4000]);
    assert_eq!(sc.selinux_options.map(|o| o.level), Some("s0:c1".into()));
    assert_eq!(sc.namespace_options.map(|o| o.network()), Some(NamespaceMode::Node));
    assert_eq!(sc.seccomp.map(|s| s.profile_type()), Some(ProfileType::RuntimeDefault));
    assert_eq!(sc.apparmor.map(|s| s.profile_type()), Some(ProfileType::Unconfined));
}

#[test]
fn supplemental_groups_policy_reaches_sandbox_and_containers() {
    let policy = |yaml: &str| {
        let p = pod(yaml);
        let c = container_security_context(&p, first(&p), &ImageUser::default(), profile(ProfileType::Unconfined));
        (
            sandbox_security_context(&p).supplemental_groups_policy(),
            c.supplemental_groups_policy(),
        )
    };
    let strict =
        "metadata: {name: p}\nspec: {securityContext: {supplementalGroupsPolicy: Strict}, containers: [{name: c}]}";
    let merge =
        "metadata: {name: p}\nspec: {securityContext: {supplementalGroupsPolicy: Merge}, containers: [{name: c}]}";
    let unset = "metadata: {name: p}\nspec: {containers: [{name: c}]}";
    use crate::cri::v1::SupplementalGroupsPolicy::{Merge, Strict};
    assert_eq!(policy(strict), (Strict, Strict));
    assert_eq!(policy(merge), (Merge, Merge));
    assert_eq!(policy(unset), (Merge, Merge));
}

#[test]
fn container_settings_override_pod_settings() {
    let p = pod("metadata: {name: p}
spec:
  securityContext: {runAsUser: 1000, runAsNonRoot: true}
  containers: [{name: c, securityContext: {runAsUser: 2000, runAsGroup: 5}}]");
    let sc = effective_security_context(&p, first(&p));
    assert_eq!(
        (sc.run_as_user, sc.run_as_group, sc.run_as_non_root),
        (Some(2000), Some(5), Some(true))
    );
}

#[test]
fn container_security_context_translates_every_field() {
    let p = pod("metadata: {name: p}
spec:
  securityContext: {fsGroup: 10}
  containers:
  - name: c
    securityContext:
      privileged: true
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {add: [NET_ADMIN], drop: [ALL]}
      runAsUser: 1000");
    let sc = container_security_context(&p, first(&p), &ImageUser::default(), profile(ProfileType::Unconfined));
    assert!(sc.privileged && sc.readonly_rootfs && sc.no_new_privs);
    let caps = sc.capabilities.unwrap_or_default();
    assert_eq!(
        (caps.add_capabilities, caps.drop_capabilities),
        (vec!["NET_ADMIN".into()], vec!["ALL".into()])
    );
    assert_eq!(sc.run_as_user, Some(Int64Value { value: 1000 }));
    assert_eq!(sc.supplemental_groups, vec![10]);
    assert_eq!(sc.namespace_options.map(|o| o.pid()), Some(NamespaceMode::Container));
    assert_eq!(sc.apparmor, None, "set by the caller from apparmor_profile");
    assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
    assert_eq!(sc.readonly_paths.len(), DEFAULT_READONLY_PATHS.len());
}

#[test]
fn no_new_privs_only_when_escalation_is_explicitly_denied() {
    let p = pod(
        "metadata: {name: p}\nspec: {containers: [{name: c}, {name: d, securityContext: {allowPrivilegeEscalation: true}}]}",
    );
    let cs = &p.spec.as_ref().unwrap().containers;
    for c in cs {
        assert!(
            !container_security_context(&p, c, &ImageUser::default(), profile(ProfileType::Unconfined)).no_new_privs
        );
    }
}

#[test]
fn unmasked_proc_mount_clears_masked_and_readonly_paths() {
    let p = pod("metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {procMount: Unmasked}}]}");
    let sc = container_security_context(&p, first(&p), &ImageUser::default(), profile(ProfileType::Unconfined));
    assert!(sc.masked_paths.is_empty() && sc.readonly_paths.is_empty());
}

#[test]
fn image_user_fills_in_when_no_run_as_user_is_set() {
    let p = pod("metadata: {name: p}\nspec: {containers: [{name: c}]}");
    let by_uid = ImageUser {
        uid: Some(65534),
        username: String::new(),
    };
    let sc = container_security_context(&p, first(&p), &by_uid, profile(ProfileType::Unconfined));
    assert_eq!(sc.run_as_user, Some(Int64Value { value: 65534 }));
    let by_name = ImageUser {
        uid: None,
        username: "nobody".into(),
    };
    let sc = container_security_context(&p, first(&p), &by_name, profile(ProfileType::Unconfined));
    assert_eq!((sc.run_as_user, sc.run_as_username.as_str()), (None, "nobody"));
}

#[test]
fn seccomp_prefers_container_then_pod_then_default() {
    let root = PathBuf::from("/var/lib/kubelet/seccomp");
    let t = |yaml: &str, default: bool| {
        let p = pod(yaml);
        seccomp_profile(&p, first(&p), &root, default)
    };
    let none = "metadata: {name: p}\nspec: {containers: [{name: c}]}";
    assert_eq!(t(none, false).map(|p| p.profile_type()), Ok(ProfileType::Unconfined));
    assert_eq!(t(none, true).map(|p| p.profile_type()), Ok(ProfileType::RuntimeDefault));
    let pod_level = "metadata: {name: p}\nspec: {securityContext: {seccompProfile: {type: RuntimeDefault}}, containers: [{name: c}]}";
    assert_eq!(
        t(pod_level, false).map(|p| p.profile_type()),
        Ok(ProfileType::RuntimeDefault)
    );
    let both = "metadata: {name: p}\nspec: {securityContext: {seccompProfile: {type: RuntimeDefault}}, containers: [{name: c, securityContext: {seccompProfile: {type: Unconfined}}}]}";
    assert_eq!(t(both, true).map(|p| p.profile_type()), Ok(ProfileType::Unconfined));
    let local = "metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {seccompProfile: {type: Localhost, localhostProfile: audit.json}}}]}";
    let l = t(local, false).unwrap_or_default();
    assert_eq!(
        (l.profile_type(), l.localhost_ref.as_str()),
        (ProfileType::Localhost, "/var/lib/kubelet/seccomp/audit.json")
    );
    let missing =
        "metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {seccompProfile: {type: Localhost}}}]}";
    assert!(t(missing, false).is_err());
}

#[test]
fn run_as_non_root_is_enforced() {
    let check = |yaml: &str, image: ImageUser| {
        let p = pod(yaml);
        verify_run_as_non_root(&p, first(&p), &image)
    };
    let root_image = ImageUser {
        uid: Some(0),
        username: String::new(),
    };
    let named = ImageUser {
        uid: None,
        username: "app".into(),
    };
    let off = "metadata: {name: p}\nspec: {containers: [{name: c}]}";
    assert_eq!(check(off, root_image.clone()), Ok(()));
    let on = "metadata: {name: p, namespace: n, uid: u}\nspec: {securityContext: {runAsNonRoot: true}, containers: [{name: c}]}";
    let e = check(on, root_image.clone()).err().unwrap_or_default();
    assert!(e.contains("image will run as root") && e.contains("p_n(u)"), "{e}");
    assert!(
        check(on, named)
            .err()
            .unwrap_or_default()
            .contains("non-numeric user (app)")
    );
    assert_eq!(
        check(
            on,
            ImageUser {
                uid: Some(1000),
                username: String::new()
            }
        ),
        Ok(())
    );
    assert_eq!(
        check(on, ImageUser::default()),
        Ok(()),
        "unknown image user passes, as upstream"
    );
    let uid0 =
        "metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {runAsNonRoot: true, runAsUser: 0}}]}";
    assert!(
        check(uid0, ImageUser::default())
            .err()
            .unwrap_or_default()
            .contains("runAsUser breaks non-root policy")
    );
    let uid1 =
        "metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {runAsNonRoot: true, runAsUser: 1}}]}";
    assert_eq!(check(uid1, root_image), Ok(()));
}

#[test]
fn apparmor_profile_from_container_then_annotation_then_pod() {
    use k8s_openapi::api::core::v1::{AppArmorProfile, PodSecurityContext, PodSpec, SecurityContext};
    let aa = |t: &str, l: Option<&str>| AppArmorProfile {
        type_: t.into(),
        localhost_profile: l.map(str::to_string),
    };
    let mut c = Container {
        name: "app".into(),
        ..Default::default()
    };
    let mut p = Pod {
        spec: Some(PodSpec::default()),
        ..Default::default()
    };
    assert_eq!(apparmor_profile(&p, &c), Ok(None), "unset: the runtime's default");
    p.spec.as_mut().unwrap().security_context = Some(PodSecurityContext {
        app_armor_profile: Some(aa("Unconfined", None)),
        ..Default::default()
    });
    assert_eq!(
        apparmor_profile(&p, &c).unwrap().map(|s| s.profile_type()),
        Some(ProfileType::Unconfined)
    );
    p.metadata.annotations = Some(
        [(
            "container.apparmor.security.beta.kubernetes.io/app".to_string(),
            "localhost/k8s-deny".to_string(),
        )]
        .into(),
    );
    let from_annotation = apparmor_profile(&p, &c).unwrap().unwrap();
    assert_eq!(
        (from_annotation.profile_type(), from_annotation.localhost_ref.as_str()),
        (ProfileType::Localhost, "k8s-deny")
    );
    c.security_context = Some(SecurityContext {
        app_armor_profile: Some(aa("RuntimeDefault", None)),
        ..Default::default()
    });
    assert_eq!(
        apparmor_profile(&p, &c).unwrap().map(|s| s.profile_type()),
        Some(ProfileType::RuntimeDefault)
    );
    c.security_context.as_mut().unwrap().app_armor_profile = Some(aa("Localhost", None));
    assert_eq!(
        apparmor_profile(&p, &c),
        Err("missing localhost apparmor profile name".into())
    );
    c.security_context.as_mut().unwrap().app_armor_profile = Some(aa("Bogus", None));
    assert!(
        apparmor_profile(&p, &c)
            .unwrap_err()
            .contains("unknown apparmor profile type")
    );
}
