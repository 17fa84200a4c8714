//! [`PodBuilder`]: pods for tests, without YAML.

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::pod_defaults::apply_api_defaults;

/// Builds a [`Pod`] the way a manifest would describe it.
///
/// [`build`](PodBuilder::build) applies the API server's defaults
/// (`restartPolicy: Always`, a 30 s grace period, pull policies …) to whatever
/// was not set. The namespace defaults to `default`; without
/// [`uid`](PodBuilder::uid) the pod source gives the pod a stable UID
/// (a hash of the pod), like a static pod.
///
/// ```
/// use actlet::testing::PodBuilder;
///
/// let pod = PodBuilder::new("job")
///     .namespace("batch")
///     .uid("uid-job")
///     .label("app", "job")
///     .init_container("setup", "busybox:1.36", ["sh", "-c", "echo ready"])
///     .container("main", "busybox:1.36", ["sh", "-c", "echo hi; sleep 2"])
///     .env("main", "GREETING", "hello")
///     .restart_policy("Never")
///     .grace_period(5)
///     .build();
/// let spec = pod.spec.as_ref().unwrap();
/// assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
/// assert_eq!(spec.containers[0].command.as_ref().unwrap()[2], "echo hi; sleep 2");
/// assert_eq!(pod.metadata.namespace.as_deref(), Some("batch"));
/// ```
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
}

impl PodBuilder {
    /// A pod called `name` in namespace `default`, with no containers yet.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").build();
    /// assert_eq!(pod.metadata.name.as_deref(), Some("web"));
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            pod: Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                spec: Some(PodSpec::default()),
                status: None,
            },
        }
    }

    /// The namespace.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").namespace("prod").build();
    /// assert_eq!(pod.metadata.namespace.as_deref(), Some("prod"));
    /// ```
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.pod.metadata.namespace = Some(namespace.into());
        self
    }

    /// An explicit UID (otherwise the source derives one from the pod).
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").uid("u-1").build();
    /// assert_eq!(pod.metadata.uid.as_deref(), Some("u-1"));
    /// ```
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.pod.metadata.uid = Some(uid.into());
        self
    }

    /// Adds a label.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").label("app", "web").build();
    /// assert_eq!(pod.metadata.labels.unwrap()["app"], "web");
    /// ```
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.pod
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    /// Adds an annotation.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").annotation("team", "a").build();
    /// assert_eq!(pod.metadata.annotations.unwrap()["team"], "a");
    /// ```
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.pod
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    /// Adds a container running `command` (empty: the image's entrypoint).
    /// On the mock runtime, `sh -c '…'` scripts follow its busybox subset
    /// (`echo`, `sleep`, `exit N`, `trap "" TERM` …).
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web")
    ///     .container("c", "busybox:1.36", ["sh", "-c", "sleep 3600"])
    ///     .build();
    /// assert_eq!(pod.spec.unwrap().containers[0].name, "c");
    /// ```
    pub fn container<I, S>(mut self, name: impl Into<String>, image: impl Into<String>, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let c = container(name.into(), image.into(), command);
        self.spec().containers.push(c);
        self
    }

    /// Adds an init container (they run one after another before the others).
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web")
    ///     .init_container("setup", "busybox:1.36", ["true"])
    ///     .build();
    /// assert_eq!(pod.spec.unwrap().init_containers.unwrap()[0].name, "setup");
    /// ```
    pub fn init_container<I, S>(mut self, name: impl Into<String>, image: impl Into<String>, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let c = container(name.into(), image.into(), command);
        self.spec().init_containers.get_or_insert_with(Vec::new).push(c);
        self
    }

    /// Sets an environment variable of the (init) container `container`
    /// added before.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web")
    ///     .container("c", "busybox:1.36", ["env"])
    ///     .env("c", "A", "1")
    ///     .build();
    /// assert_eq!(pod.spec.unwrap().containers[0].env.as_ref().unwrap()[0].name, "A");
    /// ```
    ///
    /// # Panics
    /// If no container of that name was added.
    pub fn env(mut self, container: &str, key: impl Into<String>, value: impl Into<String>) -> Self {
        let spec = self.spec();
        let c = spec
            .init_containers
            .iter_mut()
            .flatten()
            .chain(spec.containers.iter_mut())
            .find(|c| c.name == container)
            .unwrap_or_else(|| panic!("PodBuilder::env: no container {container:?} (add it first)"));
        c.env.get_or_insert_with(Vec::new).push(EnvVar {
            name: key.into(),
            value: Some(value.into()),
            value_from: None,
        });
        self
    }

    /// `restartPolicy`: `Always` (default), `OnFailure` or `Never`.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("job").restart_policy("Never").build();
    /// assert_eq!(pod.spec.unwrap().restart_policy.as_deref(), Some("Never"));
    /// ```
    pub fn restart_policy(mut self, policy: impl Into<String>) -> Self {
        self.spec().restart_policy = Some(policy.into());
        self
    }

    /// `terminationGracePeriodSeconds` (default 30).
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").grace_period(5).build();
    /// assert_eq!(pod.spec.unwrap().termination_grace_period_seconds, Some(5));
    /// ```
    pub fn grace_period(mut self, seconds: i64) -> Self {
        self.spec().termination_grace_period_seconds = Some(seconds);
        self
    }

    /// Resource requests of the container called `container` (added earlier).
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web")
    ///     .container("c", "busybox:1.36", ["sleep", "1d"])
    ///     .requests("c", &[("cpu", "100m"), ("memory", "64Mi")])
    ///     .limits("c", &[("memory", "128Mi")])
    ///     .build();
    /// let r = pod.spec.unwrap().containers[0].resources.clone().unwrap();
    /// assert_eq!(r.requests.unwrap()["memory"].0, "64Mi");
    /// assert_eq!(r.limits.unwrap()["memory"].0, "128Mi");
    /// ```
    pub fn requests(self, container: &str, resources: &[(&str, &str)]) -> Self {
        self.resources(container, resources, true)
    }

    /// Resource limits of the container called `container` (added earlier).
    pub fn limits(self, container: &str, resources: &[(&str, &str)]) -> Self {
        self.resources(container, resources, false)
    }

    fn resources(mut self, container: &str, resources: &[(&str, &str)], requests: bool) -> Self {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        for c in self.spec().containers.iter_mut().filter(|c| c.name == container) {
            let r = c.resources.get_or_insert_with(Default::default);
            let map = if requests { &mut r.requests } else { &mut r.limits };
            let map = map.get_or_insert_with(Default::default);
            for (k, v) in resources {
                map.insert((*k).to_string(), Quantity((*v).to_string()));
            }
        }
        self
    }

    /// Any other change, on the pod as built so far.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web")
    ///     .modify(|p| p.spec.as_mut().unwrap().host_network = Some(true))
    ///     .build();
    /// assert_eq!(pod.spec.unwrap().host_network, Some(true));
    /// ```
    pub fn modify(mut self, f: impl FnOnce(&mut Pod)) -> Self {
        f(&mut self.pod);
        self
    }

    /// The pod, with the API server's defaults applied to unset fields.
    ///
    /// ```
    /// let pod = actlet::testing::PodBuilder::new("web").build();
    /// assert_eq!(pod.spec.unwrap().restart_policy.as_deref(), Some("Always"));
    /// ```
    pub fn build(self) -> Pod {
        let mut pod = self.pod;
        apply_api_defaults(&mut pod);
        pod
    }

    fn spec(&mut self) -> &mut PodSpec {
        self.pod.spec.get_or_insert_with(Default::default)
    }
}

fn container<I, S>(name: String, image: String, command: I) -> Container
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let command: Vec<String> = command.into_iter().map(Into::into).collect();
    Container {
        name,
        image: Some(image),
        command: (!command.is_empty()).then_some(command),
        ..Default::default()
    }
}
