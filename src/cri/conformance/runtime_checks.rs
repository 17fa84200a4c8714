//! Checks of the runtime as a whole: version, conditions, images, unknown ids.

use tonic::Code;

use super::fixture::{Fixture, Step, ctx, ensure, expect_err};
use crate::cri::v1;

/// An id no runtime will have handed out.
const UNKNOWN_ID: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub(super) async fn version_and_status(fx: &Fixture<'_>) -> Step {
    let v = ctx(
        "Version",
        fx.rt.version(v1::VersionRequest { version: "v1".into() }).await,
    )?;
    ensure(v.runtime_api_version == "v1", || {
        format!("runtime_api_version {:?}, want v1", v.runtime_api_version)
    })?;
    ensure(!v.runtime_name.is_empty(), || "empty runtime_name".into())?;
    let s = ctx("Status", fx.rt.status(v1::StatusRequest { verbose: false }).await)?;
    let conditions = s.status.map(|s| s.conditions).unwrap_or_default();
    for kind in ["RuntimeReady", "NetworkReady"] {
        let c = conditions
            .iter()
            .find(|c| c.r#type == kind)
            .ok_or_else(|| format!("no {kind} condition"))?;
        ensure(c.status, || format!("{kind} is false: {} {}", c.reason, c.message))?;
    }
    Ok(())
}

pub(super) async fn image_status(fx: &Fixture<'_>) -> Step {
    let status = |image: &str| v1::ImageStatusRequest {
        image: Some(v1::ImageSpec {
            image: image.to_string(),
            ..Default::default()
        }),
        verbose: false,
    };
    for name in [&fx.env.busybox_image, &fx.env.pause_image] {
        let r = ctx("ImageStatus", fx.rt.image_status(status(name)).await)?;
        let img = r.image.ok_or_else(|| format!("ImageStatus({name}): image missing"))?;
        ensure(img.id.starts_with("sha256:"), || {
            format!("ImageStatus({name}): id {:?}", img.id)
        })?;
        ensure(img.repo_tags.contains(name), || {
            format!("ImageStatus({name}): repo_tags {:?}", img.repo_tags)
        })?;
        // The id names the image too.
        let by_id = ctx("ImageStatus by id", fx.rt.image_status(status(&img.id)).await)?;
        ensure(by_id.image.is_some_and(|i| i.id == img.id), || {
            format!("ImageStatus({}) found nothing", img.id)
        })?;
    }
    let missing = "docker.io/library/actlet-conformance-missing:0";
    let r = ctx(
        "ImageStatus of a missing image",
        fx.rt.image_status(status(missing)).await,
    )?;
    ensure(r.image.is_none(), || {
        format!("ImageStatus({missing}) = {:?}, want no image", r.image)
    })?;
    let list = ctx("ListImages", fx.rt.list_images(v1::ListImagesRequest::default()).await)?;
    let tags: Vec<&String> = list.images.iter().flat_map(|i| &i.repo_tags).collect();
    ensure(tags.contains(&&fx.env.busybox_image), || {
        format!("ListImages lacks {}: {tags:?}", fx.env.busybox_image)
    })
}

pub(super) async fn unknown_ids(fx: &Fixture<'_>) -> Step {
    let id = UNKNOWN_ID.to_string();
    let nf = Code::NotFound;
    let r = fx
        .rt
        .container_status(v1::ContainerStatusRequest {
            container_id: id.clone(),
            verbose: false,
        })
        .await;
    expect_err("ContainerStatus", r, nf, "not found")?;
    let r = fx
        .rt
        .pod_sandbox_status(v1::PodSandboxStatusRequest {
            pod_sandbox_id: id.clone(),
            verbose: false,
        })
        .await;
    expect_err("PodSandboxStatus", r, nf, "not found")?;
    let r = fx
        .rt
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: id.clone(),
        })
        .await;
    expect_err("StopPodSandbox", r, nf, "not found")?;
    let r = fx
        .rt
        .stop_container(v1::StopContainerRequest {
            container_id: id.clone(),
            timeout: 1,
        })
        .await;
    expect_err("StopContainer", r, nf, "not found")?;
    let r = fx
        .rt
        .start_container(v1::StartContainerRequest {
            container_id: id.clone(),
        })
        .await;
    expect_err("StartContainer", r, nf, "not found")?;
    let r = fx
        .rt
        .exec_sync(v1::ExecSyncRequest {
            container_id: id.clone(),
            cmd: vec!["true".into()],
            timeout: 0,
        })
        .await;
    expect_err("ExecSync", r, nf, "not found")?;
    ctx(
        "RemoveContainer of an unknown id",
        fx.rt
            .remove_container(v1::RemoveContainerRequest {
                container_id: id.clone(),
            })
            .await,
    )?;
    let r = fx
        .rt
        .remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id })
        .await;
    ctx("RemovePodSandbox of an unknown id", r)?;
    Ok(())
}
