//! Sandbox lifecycle checks: run, stop, remove.

use std::collections::HashMap;

use tonic::Code;

use super::fixture::{CHECK_LABEL, Fixture, Step, ctx, ensure, expect_err};
use crate::cri::v1::{self, ContainerState, PodSandboxState};

pub(super) async fn sandbox_ready_with_ip(fx: &Fixture<'_>) -> Step {
    let (id, config) = fx.run_sandbox("pod", false).await?;
    ensure(id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit()), || {
        format!("sandbox id {id:?} is not 64 hex")
    })?;
    let s = fx.sandbox_status(&id).await?;
    ensure(s.state() == PodSandboxState::SandboxReady, || {
        format!("state {:?}", s.state())
    })?;
    let ip = s.network.as_ref().map(|n| n.ip.clone()).unwrap_or_default();
    ensure(ip.parse::<std::net::IpAddr>().is_ok(), || {
        format!("sandbox IP {ip:?} is not an address")
    })?;
    ensure(s.metadata == config.metadata, || {
        format!("metadata {:?}, want {:?}", s.metadata, config.metadata)
    })?;
    ensure(s.labels == config.labels, || format!("labels {:?}", s.labels))?;
    ensure(s.created_at > 0, || "created_at is 0".into())?;
    let filter = v1::PodSandboxFilter {
        id: id.clone(),
        ..Default::default()
    };
    let by_id = ctx(
        "ListPodSandbox",
        fx.rt
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: Some(filter) })
            .await,
    )?;
    ensure(by_id.items.len() == 1 && by_id.items[0].id == id, || {
        format!("ListPodSandbox by id: {:?}", by_id.items)
    })?;
    Ok(())
}

pub(super) async fn host_network_sandbox(fx: &Fixture<'_>) -> Step {
    let (id, _) = fx.run_sandbox("hostnet", true).await?;
    let s = fx.sandbox_status(&id).await?;
    ensure(s.state() == PodSandboxState::SandboxReady, || {
        format!("state {:?}", s.state())
    })?;
    let ip = s.network.map(|n| n.ip).unwrap_or_default();
    ensure(ip.is_empty(), || format!("hostNetwork sandbox IP {ip:?}, want empty"))
}

pub(super) async fn duplicate_sandbox_name_rejected(fx: &Fixture<'_>) -> Step {
    let (id, config) = fx.run_sandbox("dup", false).await?;
    let req = v1::RunPodSandboxRequest {
        config: Some(config),
        runtime_handler: String::new(),
    };
    let e = expect_err(
        "second RunPodSandbox",
        fx.rt.run_pod_sandbox(req).await,
        Code::Unknown,
        "is reserved for",
    )?;
    ensure(e.message.contains(&id), || {
        format!("message does not name the holder {id}: {}", e.message)
    })
}

pub(super) async fn stop_pod_sandbox(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("stop", false).await?;
    let running = fx.start(&sb, "running", &["sh", "-c", "sleep 3600"], false).await?;
    let created = fx
        .create(&sb, fx.container_config("created", &["sh", "-c", "sleep 3600"], false))
        .await?;
    ctx(
        "StopPodSandbox",
        fx.rt
            .stop_pod_sandbox(v1::StopPodSandboxRequest {
                pod_sandbox_id: sb.0.clone(),
            })
            .await,
    )?;
    let s = fx.sandbox_status(&sb.0).await?;
    ensure(s.state() == PodSandboxState::SandboxNotready, || {
        format!("sandbox state {:?}", s.state())
    })?;
    let r = fx.status(&running).await?;
    ensure(
        r.state() == ContainerState::ContainerExited && r.exit_code == 137,
        || {
            format!(
                "running container after StopPodSandbox: {:?} exit {}",
                r.state(),
                r.exit_code
            )
        },
    )?;
    let c = fx.status(&created).await?;
    ensure(c.state() == ContainerState::ContainerCreated, || {
        format!("created container became {:?}", c.state())
    })?;
    let again = fx
        .rt
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: sb.0.clone(),
        })
        .await;
    ctx("second StopPodSandbox", again)?;
    let cfg = fx.container_config("late", &["sh", "-c", "sleep 3600"], false);
    let req = v1::CreateContainerRequest {
        pod_sandbox_id: sb.0.clone(),
        config: Some(cfg),
        sandbox_config: Some(sb.1.clone()),
    };
    expect_err(
        "CreateContainer in a stopped sandbox",
        fx.rt.create_container(req).await,
        Code::NotFound,
        "",
    )?;
    let r = fx
        .rt
        .start_container(v1::StartContainerRequest {
            container_id: created.clone(),
        })
        .await;
    expect_err(
        "StartContainer in a stopped sandbox",
        r,
        Code::Unknown,
        "is not running",
    )?;
    let c = fx.status(&created).await?;
    ensure(
        c.state() == ContainerState::ContainerExited && c.reason == "StartError" && c.exit_code == 128,
        || {
            format!(
                "after a failed start: {:?} exit {} reason {:?}",
                c.state(),
                c.exit_code,
                c.reason
            )
        },
    )
}

pub(super) async fn remove_pod_sandbox(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("remove", false).await?;
    let ctr = fx.start(&sb, "app", &["sh", "-c", "exit 0"], false).await?;
    fx.wait_state(&ctr, ContainerState::ContainerExited).await?;
    ctx(
        "StopPodSandbox",
        fx.rt
            .stop_pod_sandbox(v1::StopPodSandboxRequest {
                pod_sandbox_id: sb.0.clone(),
            })
            .await,
    )?;
    let remove = || {
        fx.rt.remove_pod_sandbox(v1::RemovePodSandboxRequest {
            pod_sandbox_id: sb.0.clone(),
        })
    };
    ctx("RemovePodSandbox", remove().await)?;
    let r = fx
        .rt
        .pod_sandbox_status(v1::PodSandboxStatusRequest {
            pod_sandbox_id: sb.0.clone(),
            verbose: false,
        })
        .await;
    expect_err("PodSandboxStatus after removal", r, Code::NotFound, "not found")?;
    let r = fx
        .rt
        .container_status(v1::ContainerStatusRequest {
            container_id: ctr,
            verbose: false,
        })
        .await;
    expect_err("ContainerStatus after sandbox removal", r, Code::NotFound, "not found")?;
    ctx("second RemovePodSandbox", remove().await)?;
    let req = v1::RunPodSandboxRequest {
        config: Some(sb.1.clone()),
        runtime_handler: String::new(),
    };
    let again = ctx("RunPodSandbox with the freed name", fx.rt.run_pod_sandbox(req).await)?;
    fx.rt
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: again.pod_sandbox_id.clone(),
        })
        .await
        .ok();
    fx.rt
        .remove_pod_sandbox(v1::RemovePodSandboxRequest {
            pod_sandbox_id: again.pod_sandbox_id,
        })
        .await
        .ok();
    Ok(())
}

pub(super) async fn remove_ready_pod_sandbox(fx: &Fixture<'_>) -> Step {
    let sb = fx.run_sandbox("remove-ready", false).await?;
    let ctr = fx.start(&sb, "app", &["sh", "-c", "sleep 3600"], false).await?;
    let r = fx
        .rt
        .remove_pod_sandbox(v1::RemovePodSandboxRequest {
            pod_sandbox_id: sb.0.clone(),
        })
        .await;
    ctx("RemovePodSandbox of a READY sandbox", r)?;
    let r = fx
        .rt
        .pod_sandbox_status(v1::PodSandboxStatusRequest {
            pod_sandbox_id: sb.0.clone(),
            verbose: false,
        })
        .await;
    expect_err("PodSandboxStatus after removal", r, Code::NotFound, "not found")?;
    let r = fx
        .rt
        .container_status(v1::ContainerStatusRequest {
            container_id: ctr,
            verbose: false,
        })
        .await;
    expect_err("ContainerStatus after removal", r, Code::NotFound, "not found")?;
    let selector = HashMap::from([(CHECK_LABEL.to_string(), "remove_ready_pod_sandbox".to_string())]);
    let filter = v1::PodSandboxFilter {
        label_selector: selector,
        ..Default::default()
    };
    let list = ctx(
        "ListPodSandbox",
        fx.rt
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: Some(filter) })
            .await,
    )?;
    ensure(list.items.iter().all(|s| s.id != sb.0), || {
        "removed sandbox still listed".into()
    })
}
