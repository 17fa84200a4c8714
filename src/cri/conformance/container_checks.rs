//! Container checks: lifecycle, logs, exec, exits, stop, remove, errors, lists.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;
use tonic::Code;

use super::fixture::{CHECK_LABEL, Fixture, Step, ctx, ensure, expect_err};
use crate::cri::mock::{LogStream, parse_cri_log_line};
use crate::cri::v1::{self, ContainerState};

/// The suite's main container command.
const HELLO: &[&str] = &["sh", "-c", "echo hello-from-actlet; sleep 3600"];

fn is_id(id: &str) -> bool {
    id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())
}

pub(super) async fn container_lifecycle(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("lifecycle", false).await?;
    let cfg = fx.container_config("app", HELLO, false);
    let id = fx.create(&sb, cfg.clone()).await?;
    ensure(is_id(&id), || format!("container id {id:?} is not 64 hex"))?;
    let s = fx.status(&id).await?;
    ensure(s.state() == ContainerState::ContainerCreated, || {
        format!("after create: {:?}", s.state())
    })?;
    ensure(s.created_at > 0 && s.started_at == 0 && s.finished_at == 0, || {
        format!(
            "timestamps after create: {} {} {}",
            s.created_at, s.started_at, s.finished_at
        )
    })?;
    ensure(s.metadata == cfg.metadata, || format!("metadata {:?}", s.metadata))?;
    ensure(s.labels == cfg.labels && s.annotations == cfg.annotations, || {
        format!("labels {:?} annotations {:?}", s.labels, s.annotations)
    })?;
    let want_log = Path::new(&sb.1.log_directory).join(&cfg.log_path);
    ensure(Path::new(&s.log_path) == want_log, || {
        format!("log_path {:?}, want {want_log:?}", s.log_path)
    })?;
    ensure(s.image.as_ref().is_some_and(|i| !i.image.is_empty()), || {
        format!("image {:?}", s.image)
    })?;
    ensure(!s.image_ref.is_empty(), || "empty image_ref".into())?;
    let start = || {
        fx.rt.start_container(v1::StartContainerRequest {
            container_id: id.clone(),
        })
    };
    ctx("StartContainer", start().await)?;
    let s = fx.status(&id).await?;
    ensure(s.state() == ContainerState::ContainerRunning, || {
        format!("after start: {:?}", s.state())
    })?;
    ensure(
        s.started_at >= s.created_at && s.exit_code == 0 && s.reason.is_empty(),
        || {
            format!(
                "running status: started_at {} exit {} reason {:?}",
                s.started_at, s.exit_code, s.reason
            )
        },
    )?;
    expect_err(
        "second StartContainer",
        start().await,
        Code::Unknown,
        "CONTAINER_RUNNING",
    )?;
    let filter = v1::ContainerFilter {
        id: id.clone(),
        ..Default::default()
    };
    let list = ctx(
        "ListContainers",
        fx.rt
            .list_containers(v1::ListContainersRequest { filter: Some(filter) })
            .await,
    )?;
    let c = list.containers.first().ok_or("ListContainers by id found nothing")?;
    ensure(
        c.pod_sandbox_id == sb.0 && c.state() == ContainerState::ContainerRunning,
        || format!("listed {c:?}"),
    )
}

pub(super) async fn container_log_file(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("logs", false).await?;
    let id = fx.start(&sb, "app", HELLO, false).await?;
    wait_log_line(fx, &id, "hello-from-actlet").await
}

/// Waits (up to the env's wait timeout) until the container's log file holds
/// the full stdout line `content`; every line must parse as a CRI log line.
async fn wait_log_line(fx: &Fixture<'_>, id: &str, content: &str) -> Step {
    let path = fx.log_file(id).await?;
    let deadline = Instant::now() + fx.env.wait_timeout;
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<_> = text.lines().map(|l| (l, parse_cri_log_line(l))).collect();
        if let Some((bad, _)) = lines.iter().find(|(_, p)| p.is_none()) {
            return Err(format!("{path:?}: not a CRI log line: {bad:?}"));
        }
        let found = lines
            .iter()
            .filter_map(|(_, p)| p.as_ref())
            .any(|l| l.stream == LogStream::Stdout && !l.partial && l.content == content);
        if found {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{path:?} has no `stdout F {content}` line: {text:?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn exec(fx: &Fixture<'_>, id: &str, cmd: &[&str], timeout: i64) -> crate::cri::CriResult<v1::ExecSyncResponse> {
    let req = v1::ExecSyncRequest {
        container_id: id.to_string(),
        cmd: cmd.iter().map(|s| s.to_string()).collect(),
        timeout,
    };
    fx.rt.exec_sync(req).await
}

pub(super) async fn exec_sync(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("exec", false).await?;
    let id = fx.start(&sb, "app", HELLO, false).await?;
    let r = ctx("ExecSync echo hi", exec(fx, &id, &["echo", "hi"], 10).await)?;
    ensure(r.stdout == b"hi\n" && r.stderr.is_empty() && r.exit_code == 0, || {
        format!("echo hi: {r:?}")
    })?;
    let r = ctx("ExecSync exit 3", exec(fx, &id, &["sh", "-c", "exit 3"], 10).await)?;
    ensure(r.exit_code == 3, || format!("sh -c 'exit 3': {r:?}"))?;
    let r = ctx(
        "ExecSync stderr",
        exec(fx, &id, &["sh", "-c", "echo out; echo err >&2"], 10).await,
    )?;
    ensure(r.stdout == b"out\n" && r.stderr == b"err\n" && r.exit_code == 0, || {
        format!("stdout+stderr: {r:?}")
    })
}

pub(super) async fn exec_sync_timeout(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("exec-timeout", false).await?;
    let id = fx.start(&sb, "app", HELLO, false).await?;
    let start = Instant::now();
    let r = exec(fx, &id, &["sleep", "10"], 1).await;
    let took = start.elapsed();
    fx.record("exec_timeout", took);
    expect_err("ExecSync past its timeout", r, Code::DeadlineExceeded, "")?;
    ensure(took >= Duration::from_secs(1), || {
        format!("DEADLINE_EXCEEDED after {took:?}, before the 1s timeout")
    })
}

pub(super) async fn exec_in_exited_container_fails(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("exec-exited", false).await?;
    let id = fx.start(&sb, "app", &["sh", "-c", "exit 0"], false).await?;
    fx.wait_state(&id, ContainerState::ContainerExited).await?;
    expect_err(
        "ExecSync in an exited container",
        exec(fx, &id, &["echo", "hi"], 10).await,
        Code::Unknown,
        "CONTAINER_EXITED",
    )
    .map(drop)
}

pub(super) async fn container_exit_codes(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("exit-codes", false).await?;
    for (name, script, code, reason) in [
        ("fails", "echo bye; exit 3", 3, "Error"),
        ("succeeds", "exit 0", 0, "Completed"),
    ] {
        let id = fx.start(&sb, name, &["sh", "-c", script], false).await?;
        let s = fx.wait_state(&id, ContainerState::ContainerExited).await?;
        ensure(
            s.exit_code == code && s.reason == reason && s.message.is_empty(),
            || {
                format!(
                    "{script:?}: exit {} reason {:?} message {:?}, want {code} {reason:?}",
                    s.exit_code, s.reason, s.message
                )
            },
        )?;
        // containerd stamps started_at after the task started, so a process
        // that exits at once can have finished_at < started_at: only order
        // against created_at.
        ensure(s.started_at > 0 && s.finished_at >= s.created_at, || {
            format!(
                "{script:?}: created_at {} started_at {} finished_at {}",
                s.created_at, s.started_at, s.finished_at
            )
        })?;
    }
    Ok(())
}

async fn timed_stop(fx: &Fixture<'_>, id: &str, timeout: i64, label: &str) -> Step<(v1::ContainerStatus, Duration)> {
    let start = Instant::now();
    let r = fx
        .rt
        .stop_container(v1::StopContainerRequest {
            container_id: id.to_string(),
            timeout,
        })
        .await;
    let took = start.elapsed();
    fx.record(label, took);
    ctx("StopContainer", r)?;
    Ok((fx.status(id).await?, took))
}

pub(super) async fn stop_container_sigterm(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("stop-term", false).await?;
    // In the pod's PID namespace the process is not PID 1: SIGTERM kills it.
    let id = fx.start(&sb, "app", &["sh", "-c", "sleep 3600"], true).await?;
    let (s, _) = timed_stop(fx, &id, 30, "stop").await?;
    ensure(
        s.state() == ContainerState::ContainerExited && s.exit_code == 143 && s.reason == "Error",
        || {
            format!(
                "after StopContainer: {:?} exit {} reason {:?}, want EXITED 143 Error",
                s.state(),
                s.exit_code,
                s.reason
            )
        },
    )
}

pub(super) async fn stop_container_ignoring_sigterm(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("stop-kill", false).await?;
    let id = fx
        .start(
            &sb,
            "app",
            &["sh", "-c", "trap \"\" TERM; echo trapped; sleep 3600"],
            false,
        )
        .await?;
    // Stopped before the shell ran `trap`, SIGTERM would end it at once.
    wait_log_line(fx, &id, "trapped").await?;
    let (s, took) = timed_stop(fx, &id, 2, "stop_timeout_2s").await?;
    ensure(took >= Duration::from_secs(2), || {
        format!("StopContainer returned after {took:?}, before its 2s timeout")
    })?;
    ensure(
        s.state() == ContainerState::ContainerExited && s.exit_code == 137,
        || {
            format!(
                "after StopContainer: {:?} exit {}, want EXITED 137",
                s.state(),
                s.exit_code
            )
        },
    )
}

pub(super) async fn stop_exited_and_unknown_container(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("stop-exited", false).await?;
    let id = fx.start(&sb, "app", &["sh", "-c", "exit 0"], false).await?;
    fx.wait_state(&id, ContainerState::ContainerExited).await?;
    let (s, _) = timed_stop(fx, &id, 2, "stop_exited").await?;
    ensure(s.exit_code == 0 && s.reason == "Completed", || {
        format!("stopping changed the exit: {} {:?}", s.exit_code, s.reason)
    })?;
    let unknown = format!("{:064x}", rand::random::<u128>());
    let r = fx
        .rt
        .stop_container(v1::StopContainerRequest {
            container_id: unknown,
            timeout: 2,
        })
        .await;
    expect_err("StopContainer of an unknown id", r, Code::NotFound, "not found").map(drop)
}

pub(super) async fn remove_container(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("remove-ctr", false).await?;
    let exited = fx.start(&sb, "exited", &["sh", "-c", "exit 0"], false).await?;
    fx.wait_state(&exited, ContainerState::ContainerExited).await?;
    let running = fx.start(&sb, "running", HELLO, false).await?;
    for (what, id) in [("exited", &exited), ("running", &running)] {
        let remove = || {
            fx.rt.remove_container(v1::RemoveContainerRequest {
                container_id: id.clone(),
            })
        };
        ctx(&format!("RemoveContainer of the {what} container"), remove().await)?;
        let r = fx
            .rt
            .container_status(v1::ContainerStatusRequest {
                container_id: id.clone(),
                verbose: false,
            })
            .await;
        expect_err(
            &format!("ContainerStatus of the removed {what} container"),
            r,
            Code::NotFound,
            "not found",
        )?;
        ctx(
            &format!("second RemoveContainer of the {what} container"),
            remove().await,
        )?;
    }
    // The name is free again.
    fx.create(&sb, fx.container_config("exited", &["sh", "-c", "exit 0"], false))
        .await
        .map(drop)
}

pub(super) async fn create_container_errors(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("create-errors", false).await?;
    let req = |sandbox: &str, cfg: v1::ContainerConfig| v1::CreateContainerRequest {
        pod_sandbox_id: sandbox.to_string(),
        config: Some(cfg),
        sandbox_config: Some(sb.1.clone()),
    };
    let mut missing = fx.container_config("missing-image", &["sh"], false);
    missing.image = Some(v1::ImageSpec {
        image: "docker.io/library/actlet-conformance-missing:0".into(),
        ..Default::default()
    });
    let r = fx.rt.create_container(req(&sb.0, missing)).await;
    expect_err("CreateContainer with a missing image", r, Code::NotFound, "not found")?;
    let unknown = format!("{:064x}", rand::random::<u128>());
    let r = fx
        .rt
        .create_container(req(&unknown, fx.container_config("orphan", &["sh"], false)))
        .await;
    expect_err("CreateContainer in an unknown sandbox", r, Code::NotFound, "not found")?;
    let first = fx.create(&sb, fx.container_config("dup", HELLO, false)).await?;
    let r = fx
        .rt
        .create_container(req(&sb.0, fx.container_config("dup", HELLO, false)))
        .await;
    let e = expect_err(
        "second CreateContainer with the same name",
        r,
        Code::Unknown,
        "is reserved for",
    )?;
    ensure(e.message.contains(&first), || {
        format!("message does not name the holder {first}: {}", e.message)
    })
}

pub(super) async fn list_filters(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("lists", false).await?;
    let one = fx.start(&sb, "one", HELLO, false).await?;
    let two = fx.start(&sb, "two", &["sh", "-c", "exit 0"], false).await?;
    fx.wait_state(&two, ContainerState::ContainerExited).await?;
    let list = |filter: v1::ContainerFilter| async move {
        let r = fx
            .rt
            .list_containers(v1::ListContainersRequest { filter: Some(filter) })
            .await;
        let mut ids: Vec<String> = ctx("ListContainers", r)?.containers.into_iter().map(|c| c.id).collect();
        ids.sort();
        Ok::<_, String>(ids)
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let in_sb = |f: v1::ContainerFilter| v1::ContainerFilter {
        pod_sandbox_id: sb.0.clone(),
        ..f
    };
    let state = |s: ContainerState| Some(v1::ContainerStateValue { state: s as i32 });
    let label = |v: &str| HashMap::from([("name".to_string(), v.to_string())]);
    let cases = [
        (
            "sandbox",
            in_sb(Default::default()),
            sorted(vec![one.clone(), two.clone()]),
        ),
        (
            "id",
            v1::ContainerFilter {
                id: one.clone(),
                ..Default::default()
            },
            vec![one.clone()],
        ),
        (
            "running",
            in_sb(v1::ContainerFilter {
                state: state(ContainerState::ContainerRunning),
                ..Default::default()
            }),
            vec![one.clone()],
        ),
        (
            "exited",
            in_sb(v1::ContainerFilter {
                state: state(ContainerState::ContainerExited),
                ..Default::default()
            }),
            vec![two.clone()],
        ),
        (
            "label",
            in_sb(v1::ContainerFilter {
                label_selector: label("two"),
                ..Default::default()
            }),
            vec![two.clone()],
        ),
        (
            "no match",
            in_sb(v1::ContainerFilter {
                label_selector: label("three"),
                ..Default::default()
            }),
            vec![],
        ),
    ];
    for (what, filter, want) in cases {
        let got = list(filter).await?;
        ensure(got == want, || {
            format!("ListContainers by {what}: {got:?}, want {want:?}")
        })?;
    }
    let selector = HashMap::from([(CHECK_LABEL.to_string(), "list_filters".to_string())]);
    let ready = Some(v1::PodSandboxStateValue {
        state: v1::PodSandboxState::SandboxReady as i32,
    });
    let filter = v1::PodSandboxFilter {
        label_selector: selector,
        state: ready,
        ..Default::default()
    };
    let r = ctx(
        "ListPodSandbox",
        fx.rt
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: Some(filter) })
            .await,
    )?;
    ensure(r.items.iter().any(|s| s.id == sb.0), || {
        format!("ListPodSandbox by label+state misses {}", sb.0)
    })
}
