//! [`PodVolumeContext`]: what a pod worker hands the runtime manager for
//! one sync — the pod's set-up volumes, the objects its env reads and its
//! image pull credentials.

use super::env_objects::EnvObjects;
use super::mounts::VolumeMap;
use super::pull_secrets::RegistryCredential;

/// The pod's volumes (by name) and env objects.
///
/// ```
/// let ctx = actlet::volumes::PodVolumeContext::default();
/// assert!(ctx.volumes.is_empty() && !ctx.env.has_client);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodVolumeContext {
    /// Set-up volumes by name.
    pub volumes: VolumeMap,
    /// ConfigMaps/Secrets read by env.
    pub env: EnvObjects,
    /// Credentials from the pod's imagePullSecrets.
    pub pull_secrets: Vec<RegistryCredential>,
}
