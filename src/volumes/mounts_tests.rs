use super::*;

fn container(yaml: &str) -> Container {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad container: {e}"))
}

fn volumes(root: &Path) -> VolumeMap {
    let cache = root.join("cache");
    let cfg = root.join("cfg");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(cfg.join("..data_dir")).unwrap();
    VolumeMap::from([
        (
            "cache".to_string(),
            MountedVolume {
                plugin: Plugin::EmptyDir,
                host_path: cache,
                read_only: false,
            },
        ),
        (
            "cfg".to_string(),
            MountedVolume {
                plugin: Plugin::ConfigMap,
                host_path: cfg,
                read_only: true,
            },
        ),
    ])
}

#[test]
fn mounts_carry_paths_read_only_and_propagation() {
    let dir = tempfile::tempdir().unwrap();
    let v = volumes(dir.path());
    let c = container(
        "{name: app, volumeMounts: [{name: cache, mountPath: /cache, mountPropagation: HostToContainer}, {name: cfg, mountPath: /etc/app}, {name: cache, mountPath: /ro, readOnly: true}]}",
    );
    let m = container_mounts(&c, &v, &[]).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].host_path, dir.path().join("cache").to_string_lossy());
    assert_eq!(m[0].container_path, "/cache");
    assert_eq!(m[0].propagation, MountPropagation::PropagationHostToContainer as i32);
    assert!(!m[0].readonly);
    assert!(m[1].readonly, "configMap volumes are always read-only");
    assert!(m[2].readonly);
}

#[test]
fn sub_paths_are_created_inside_the_volume() {
    let dir = tempfile::tempdir().unwrap();
    let v = volumes(dir.path());
    let envs = vec![("POD_NAME".to_string(), "web-0".to_string())];
    let c = container(
        "{name: app, volumeMounts: [{name: cache, mountPath: /a, subPath: logs/a}, {name: cache, mountPath: /b, subPathExpr: 'pods/$(POD_NAME)'}]}",
    );
    let m = container_mounts(&c, &v, &envs).unwrap();
    let base = dir.path().canonicalize().unwrap().join("cache");
    assert_eq!(m[0].host_path, base.join("logs/a").to_string_lossy());
    assert_eq!(m[1].host_path, base.join("pods/web-0").to_string_lossy());
    assert!(base.join("pods/web-0").is_dir());
}

#[test]
fn bad_mounts_are_refused_and_write_nothing_outside() {
    let dir = tempfile::tempdir().unwrap();
    let v = volumes(dir.path());
    let err = |yaml: &str| container_mounts(&container(yaml), &v, &[]).unwrap_err();
    assert_eq!(
        err("{name: app, volumeMounts: [{name: nope, mountPath: /x}]}"),
        "cannot find volume \"nope\" to mount into container \"app\""
    );
    assert_eq!(
        err("{name: app, volumeMounts: [{name: cache, mountPath: /x}, {name: cfg, mountPath: /x/}]}"),
        "volumeMounts[1].mountPath: Invalid value: \"/x/\": must be unique"
    );
    assert_eq!(
        err("{name: app, volumeMounts: [{name: cache, mountPath: /x, subPath: ../../escape}]}"),
        "unable to provision SubPath `../../escape`: must not contain '..'"
    );
    assert_eq!(
        err("{name: app, volumeMounts: [{name: cache, mountPath: /x, subPath: /etc}]}"),
        "error SubPath `/etc` must not be an absolute path"
    );
    assert_eq!(
        err("{name: app, volumeMounts: [{name: cache, mountPath: /x, subPathExpr: '$(UNSET)'}]}"),
        "missing value for UNSET"
    );
    // A symlink inside the volume pointing out of it.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("cache/link")).unwrap();
    let e = err("{name: app, volumeMounts: [{name: cache, mountPath: /x, subPath: link}]}");
    assert!(e.contains("not within volume path"), "{e}");
    let e = err("{name: app, volumeMounts: [{name: cache, mountPath: /x, subPath: link/new/dir}]}");
    assert!(e.contains("not within volume path"), "{e}");
    assert!(
        !outside.path().join("new").exists(),
        "no directory created through the symlink"
    );
    assert!(!dir.path().join("escape").exists());
}
