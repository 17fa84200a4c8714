use super::*;

/// A cgroup-limit OOM on Linux 6.x (containerd/runc container of a Burstable pod).
const MEMCG_OOM: &str = "\
4,2741,1854732119,-;dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=984
 SUBSYSTEM=memory
4,2742,1854732140,-;CPU: 1 PID: 88121 Comm: dd Not tainted 6.1.0-18-amd64 #1  Debian 6.1.76-1
6,2760,1854732301,-;memory: usage 65536kB, limit 65536kB, failcnt 83
6,2770,1854732420,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=5c1f0e7d9a3b,mems_allowed=0,oom_memcg=/kubepods/burstable/pod0f3d5c1e-8a6b-4c2e-9b7a-2d1e4f5a6b7c/5c1f0e7d9a3b,task_memcg=/kubepods/burstable/pod0f3d5c1e-8a6b-4c2e-9b7a-2d1e4f5a6b7c/5c1f0e7d9a3b,task=dd,pid=88121,uid=0
3,2771,1854732433,-;Memory cgroup out of memory: Killed process 88121 (dd) total-vm:70712kB, anon-rss:64912kB, file-rss:1664kB, shmem-rss:0kB, UID:0 pgtables:176kB oom_score_adj:984
";

/// A system-wide OOM (no cgroup limit; `global_oom`, no `oom_memcg`).
const SYSTEM_OOM: &str = "\
4,9001,7200000000,-;stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0
6,9030,7200000200,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/user.slice/user-1000.slice/session-3.scope,task=stress,pid=4501,uid=1000
3,9031,7200000210,-;Out of memory: Killed process 4501 (stress) total-vm:8392704kB, anon-rss:7861248kB, file-rss:4kB, shmem-rss:0kB, UID:1000 pgtables:15424kB oom_score_adj:0
";

/// Linux 4.14 wording.
const OLD_KERNEL_OOM: &str = "\
4,100,5000,-;sh invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), order=0, oom_score_adj=1000
6,101,5001,-;Task in /kubepods/besteffort/podabc/ctr1 killed as a result of limit of /kubepods/besteffort/podabc
3,102,5002,-;Memory cgroup out of memory: Kill process 321 (sh) score 1995 or sacrificing child
3,103,5003,-;Killed process 321 (sh) total-vm:4400kB, anon-rss:100kB, file-rss:0kB, shmem-rss:0kB
";

fn kills(text: &str) -> Vec<OomInstance> {
    let mut p = OomParser::default();
    parse_chunk(text).iter().filter_map(|r| p.feed(r)).collect()
}

#[test]
fn records_parse_and_continuation_lines_are_skipped() {
    let r = parse_record("6,2770,1854732420,-;hello; world").unwrap();
    assert_eq!(
        (r.seq, r.timestamp_us, r.message.as_str()),
        (2770, 1854732420, "hello; world")
    );
    assert_eq!(parse_record(" SUBSYSTEM=memory"), None);
    assert_eq!(parse_record("garbage"), None);
    assert_eq!(parse_record("6,x,1,-;m"), None);
    assert_eq!(parse_chunk(MEMCG_OOM).len(), 5);
}

#[test]
fn cgroup_limit_oom_names_the_containers_cgroup() {
    let k = kills(MEMCG_OOM);
    assert_eq!(k.len(), 1);
    let cg = "/kubepods/burstable/pod0f3d5c1e-8a6b-4c2e-9b7a-2d1e4f5a6b7c/5c1f0e7d9a3b";
    assert_eq!(
        k[0],
        OomInstance {
            pid: 88121,
            process_name: "dd".into(),
            timestamp_us: 1854732119,
            container_name: cg.into(),
            victim_container_name: cg.into(),
            constraint: "MEMCG".into(),
        }
    );
    assert!(!k[0].is_system_oom());
}

#[test]
fn system_oom_has_the_root_as_victim() {
    let k = kills(SYSTEM_OOM);
    assert_eq!(k.len(), 1);
    assert!(k[0].is_system_oom());
    assert_eq!((k[0].pid, k[0].process_name.as_str()), (4501, "stress"));
    assert_eq!(k[0].container_name, "/user.slice/user-1000.slice/session-3.scope");
    assert_eq!(k[0].constraint, "NONE");
}

#[test]
fn old_kernel_wording() {
    let k = kills(OLD_KERNEL_OOM);
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].container_name, "/kubepods/besteffort/podabc/ctr1");
    assert_eq!(k[0].victim_container_name, "/kubepods/besteffort/podabc");
    assert_eq!((k[0].pid, k[0].process_name.as_str()), (321, "sh"));
}

#[test]
fn several_kills_in_a_row_and_stray_lines() {
    let text = format!("6,1,1,-;Killed process 9 (orphan)\n{MEMCG_OOM}6,5,5,-;unrelated\n{SYSTEM_OOM}");
    let k = kills(&text);
    assert_eq!(
        k.iter().map(|k| k.pid).collect::<Vec<_>>(),
        [88121, 4501],
        "a kill line without its start is skipped"
    );
}
