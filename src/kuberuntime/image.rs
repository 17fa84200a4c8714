//! Making sure a container's image is present (upstream `EnsureImageExists`).
//!
//! `ImageStatus` comes first: containerd's `PullImage` always contacts the
//! registry, even for a present image. Then the pull policy decides:
//!
//! | policy (default: `Always` for `:latest`/untagged, else `IfNotPresent`) | present | missing |
//! |---|---|---|
//! | `Never` | use it | `ErrImageNeverPull` |
//! | `IfNotPresent` | use it | pull |
//! | `Always` | pull | pull |
//!
//! A failed pull is `ErrImagePull` and starts the image backoff (key
//! `<uid>_<image>`); while in backoff the answer is `ImagePullBackOff`
//! without calling the runtime.
//!
//! Events (upstream's, about the container): `Pulling`, `Pulled` (pulled in
//! some time, or already present), `Failed` (the pull failed), `BackOff`
//! (Normal, as upstream: in image pull backoff), `ErrImageNeverPull`,
//! `InspectFailed`.

use k8s_openapi::api::core::v1::{Container, Pod};
use tokio::time::Instant;

use super::backoff::image_backoff_key;
use super::manager::RuntimeManager;
use super::manager::go_duration_precise;
use super::security_context::ImageUser;
use super::sync_result::{SyncError, SyncErrorReason};
use crate::cri::v1::{self, ImageSpec};
use crate::messages::event::EventType;

/// Upstream event reasons of the image manager.
mod reason {
    pub const PULLING: &str = "Pulling";
    pub const PULLED: &str = "Pulled";
    pub const FAILED: &str = "Failed";
    pub const BACK_OFF: &str = "BackOff";
    pub const INSPECT_FAILED: &str = "InspectFailed";
    pub const ERR_IMAGE_NEVER_PULL: &str = "ErrImageNeverPull";
}

/// A container image's pull policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPolicy {
    /// Always pull.
    Always,
    /// Pull when missing.
    IfNotPresent,
    /// Never pull.
    Never,
}

/// `repo[:tag][@digest]` split: (has tag, has digest). `None` if invalid.
fn tag_and_digest(image: &str) -> Option<(bool, bool)> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) if !d.is_empty() && !n.is_empty() => (n, true),
        Some(_) => return None,
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tagged = last.contains(':');
    if last.ends_with(':') || last.starts_with(':') {
        return None;
    }
    Some((tagged, digest))
}

/// The image with `:latest` added when it has neither tag nor digest
/// (upstream `applyDefaultImageTag`); `None` for an invalid reference.
pub fn apply_default_tag(image: &str) -> Option<String> {
    match tag_and_digest(image)? {
        (false, false) => Some(format!("{image}:latest")),
        _ => Some(image.to_string()),
    }
}

/// The container's pull policy, defaulted as the API server does.
pub fn pull_policy(container: &Container) -> PullPolicy {
    match container.image_pull_policy.as_deref() {
        Some("Always") => PullPolicy::Always,
        Some("IfNotPresent") => PullPolicy::IfNotPresent,
        Some("Never") => PullPolicy::Never,
        _ => {
            let image = container.image.as_deref().unwrap_or_default();
            let latest = match tag_and_digest(image) {
                Some((_, true)) => false,
                Some((true, false)) => image.ends_with(":latest"),
                _ => true,
            };
            if latest {
                PullPolicy::Always
            } else {
                PullPolicy::IfNotPresent
            }
        }
    }
}

/// Upstream `shouldPullImage`.
pub fn should_pull(policy: PullPolicy, present: bool) -> bool {
    match policy {
        PullPolicy::Never => false,
        PullPolicy::Always => true,
        PullPolicy::IfNotPresent => !present,
    }
}

/// The user an image runs as; root when it names none (upstream `getImageUser`).
pub fn image_user(image: Option<&v1::Image>) -> ImageUser {
    match image {
        Some(i) if i.uid.is_some() => ImageUser {
            uid: i.uid.map(|u| u.value),
            username: String::new(),
        },
        Some(i) if !i.username.is_empty() => ImageUser {
            uid: None,
            username: i.username.clone(),
        },
        _ => ImageUser {
            uid: Some(0),
            username: String::new(),
        },
    }
}

/// A present image: its id and user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnsuredImage {
    /// The image id, passed to `CreateContainer`.
    pub image_ref: String,
    /// The user it runs as.
    pub user: ImageUser,
}

impl RuntimeManager {
    async fn image_status(&self, image: &str) -> Result<Option<v1::Image>, crate::cri::CriError> {
        let spec = ImageSpec {
            image: image.to_string(),
            ..Default::default()
        };
        let resp = self
            .runtime
            .image_status(v1::ImageStatusRequest {
                image: Some(spec),
                verbose: false,
            })
            .await?;
        Ok(resp.image.filter(|i| !i.id.is_empty()))
    }

    /// Makes sure `container`'s image is present, pulling per its policy
    /// (with the matching `credentials`, tried in order, as upstream).
    pub async fn ensure_image(
        &self,
        pod: &Pod,
        container: &Container,
        sandbox_config: &v1::PodSandboxConfig,
        credentials: &[crate::volumes::pull_secrets::RegistryCredential],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<EnsuredImage, SyncError> {
        let spec_image = container.image.clone().unwrap_or_default();
        let event = |type_, reason: &str, message: &str| {
            self.container_event(pod, &container.name, type_, reason, message);
        };
        let Some(image) = apply_default_tag(&spec_image) else {
            let msg =
                format!("Failed to apply default image tag {spec_image:?}: couldn't parse image name {spec_image:?}");
            event(EventType::Warning, reason::INSPECT_FAILED, &msg);
            return Err(SyncError::new(SyncErrorReason::InvalidImageName, msg));
        };
        let present = match self.image_status(&image).await {
            Ok(present) => present,
            Err(e) => {
                let msg = format!("Failed to inspect image {spec_image:?}: {e}");
                event(EventType::Warning, reason::INSPECT_FAILED, &msg);
                return Err(SyncError::new(SyncErrorReason::ImageInspectError, msg));
            }
        };
        if !should_pull(pull_policy(container), present.is_some()) {
            return match present {
                Some(img) => {
                    let msg = format!("Container image {spec_image:?} already present on machine");
                    tracing::debug!(image = %spec_image, "container image already present on machine");
                    event(EventType::Normal, reason::PULLED, &msg);
                    Ok(EnsuredImage {
                        image_ref: img.id.clone(),
                        user: image_user(Some(&img)),
                    })
                }
                None => {
                    let msg = format!("Container image {spec_image:?} is not present with pull policy of Never");
                    event(EventType::Warning, reason::ERR_IMAGE_NEVER_PULL, &msg);
                    Err(SyncError::new(SyncErrorReason::ErrImageNeverPull, msg))
                }
            };
        }
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let key = image_backoff_key(uid, &spec_image);
        if self.image_backoff.is_in_backoff_since_update(&key, Instant::now()) {
            let msg = format!("Back-off pulling image {spec_image:?}");
            event(EventType::Normal, reason::BACK_OFF, &msg);
            return Err(SyncError::new(SyncErrorReason::ImagePullBackOff, msg));
        }
        tracing::info!(image = %spec_image, "pulling image");
        event(
            EventType::Normal,
            reason::PULLING,
            &format!("Pulling image {spec_image:?}"),
        );
        let started = Instant::now();
        let pull = async {
            // A pull waits for a slot; pods whose images are present never do.
            let _slot = match &self.pull_slots {
                Some(slots) => slots.clone().acquire_owned().await.ok(),
                None => None,
            };
            let auths = crate::volumes::pull_secrets::lookup(credentials, &image);
            let attempts: Vec<Option<v1::AuthConfig>> = if auths.is_empty() {
                vec![None]
            } else {
                auths.into_iter().map(Some).collect()
            };
            let mut result = None;
            for auth in attempts {
                let req = v1::PullImageRequest {
                    image: Some(ImageSpec {
                        image: image.clone(),
                        ..Default::default()
                    }),
                    auth,
                    sandbox_config: Some(sandbox_config.clone()),
                };
                let r = self.runtime.pull_image(req).await;
                let ok = r.is_ok();
                result = Some(r);
                if ok {
                    break;
                }
            }
            result.unwrap_or_else(|| {
                Err(crate::cri::CriError::new(
                    "PullImage",
                    tonic::Code::Internal,
                    "no pull attempted",
                ))
            })
        };
        // A pull (queued behind others or running) is the one CRI call a
        // kill may abandon: it changes nothing a later sync relies on.
        // The pod's sync turn is given back while the pull waits and runs
        // (`SyncSlots`): pods whose images are present do not wait for it.
        let pull = crate::pod_workers::sync_slots::step_aside(pull, cancel);
        let pulled = tokio::select! {
            pulled = pull => pulled,
            () = cancel.cancelled() => {
                tracing::info!(image = %spec_image, "image pull abandoned: the pod is being killed");
                return Err(SyncError::new(SyncErrorReason::ErrImagePull, format!("pull of {spec_image:?} abandoned: the pod is being killed")));
            }
        };
        let image_ref = match pulled {
            Ok(resp) => resp.image_ref,
            Err(e) => {
                let now = Instant::now();
                self.image_backoff.next(&key, now, now);
                tracing::warn!(image = %spec_image, error = %e, "failed to pull image");
                let msg = format!("rpc error: code = {:?} desc = {}", e.code, e.message);
                event(
                    EventType::Warning,
                    reason::FAILED,
                    &format!("Failed to pull image {spec_image:?}: {msg}"),
                );
                return Err(SyncError::new(SyncErrorReason::ErrImagePull, msg));
            }
        };
        let took = go_duration_precise(started.elapsed());
        event(
            EventType::Normal,
            reason::PULLED,
            &format!("Successfully pulled image {spec_image:?} in {took}"),
        );
        self.image_backoff.gc(Instant::now());
        tracing::info!(image = %spec_image, %image_ref, "successfully pulled image");
        let lookup = if image_ref.is_empty() {
            image.as_str()
        } else {
            image_ref.as_str()
        };
        let pulled_image = self.image_status(lookup).await.map_err(|e| {
            SyncError::new(
                SyncErrorReason::CreateContainerConfigError,
                format!("failed to get image user: {e}"),
            )
        })?;
        let image_ref = if image_ref.is_empty() {
            pulled_image.as_ref().map(|i| i.id.clone()).unwrap_or_default()
        } else {
            image_ref
        };
        Ok(EnsuredImage {
            image_ref,
            user: image_user(pulled_image.as_ref()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(image: &str, policy: Option<&str>) -> Container {
        Container {
            name: "c".into(),
            image: Some(image.into()),
            image_pull_policy: policy.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn default_tag_is_latest_for_untagged_images() {
        assert_eq!(apply_default_tag("busybox").as_deref(), Some("busybox:latest"));
        assert_eq!(apply_default_tag("busybox:1.36").as_deref(), Some("busybox:1.36"));
        assert_eq!(
            apply_default_tag("localhost:5000/app").as_deref(),
            Some("localhost:5000/app:latest")
        );
        assert_eq!(
            apply_default_tag("localhost:5000/app:v1").as_deref(),
            Some("localhost:5000/app:v1")
        );
        let digest = "busybox@sha256:0123456789abcdef";
        assert_eq!(apply_default_tag(digest).as_deref(), Some(digest));
        for bad in ["", "bad image", "busybox:", "@sha256:x", "busybox@"] {
            assert_eq!(apply_default_tag(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn pull_policy_defaults_like_the_api_server() {
        assert_eq!(pull_policy(&container("busybox", None)), PullPolicy::Always);
        assert_eq!(pull_policy(&container("busybox:latest", None)), PullPolicy::Always);
        assert_eq!(pull_policy(&container("busybox:1.36", None)), PullPolicy::IfNotPresent);
        assert_eq!(
            pull_policy(&container("busybox@sha256:abc", None)),
            PullPolicy::IfNotPresent
        );
        assert_eq!(pull_policy(&container("localhost:5000/app", None)), PullPolicy::Always);
        assert_eq!(
            pull_policy(&container("busybox:1.36", Some("Always"))),
            PullPolicy::Always
        );
        assert_eq!(pull_policy(&container("busybox", Some("Never"))), PullPolicy::Never);
        assert_eq!(
            pull_policy(&container("busybox", Some("IfNotPresent"))),
            PullPolicy::IfNotPresent
        );
    }

    #[test]
    fn should_pull_follows_the_policy_table() {
        let table = [
            (PullPolicy::Never, true, false),
            (PullPolicy::Never, false, false),
            (PullPolicy::IfNotPresent, true, false),
            (PullPolicy::IfNotPresent, false, true),
            (PullPolicy::Always, true, true),
            (PullPolicy::Always, false, true),
        ];
        for (policy, present, want) in table {
            assert_eq!(should_pull(policy, present), want, "{policy:?} present={present}");
        }
    }

    #[test]
    fn image_user_defaults_to_root() {
        let by_uid = v1::Image {
            uid: Some(v1::Int64Value { value: 65534 }),
            ..Default::default()
        };
        assert_eq!(
            image_user(Some(&by_uid)),
            ImageUser {
                uid: Some(65534),
                username: String::new()
            }
        );
        let by_name = v1::Image {
            username: "app".into(),
            ..Default::default()
        };
        assert_eq!(
            image_user(Some(&by_name)),
            ImageUser {
                uid: None,
                username: "app".into()
            }
        );
        assert_eq!(image_user(Some(&v1::Image::default())).uid, Some(0));
        assert_eq!(image_user(None).uid, Some(0));
    }
}
