//! [`TestSystem`] and [`run_paused`]: an actix `System` on a tokio runtime
//! whose clock is paused.

use std::future::Future;

/// An actix `System` for tests, on a current-thread tokio runtime.
///
/// With [`TestSystem::paused`], tokio time starts **paused**: whenever every
/// task is idle, the clock jumps to the next timer, so a container that
/// "sleeps 3600" exits at once and a 30 s timeout costs microseconds. The
/// mock runtime's [`Clock`](crate::cri::mock::Clock) and a
/// [`TestNode`](super::TestNode)'s wall clock follow that virtual time.
///
/// When `RUST_LOG` is set, the first system started in a process also
/// installs a `tracing` subscriber that writes to the test output.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::TestSystem;
///
/// let system = TestSystem::paused();
/// let waited = system.block_on(async {
///     let start = tokio::time::Instant::now();
///     tokio::time::sleep(Duration::from_secs(3600)).await; // instant
///     start.elapsed()
/// });
/// assert_eq!(waited, Duration::from_secs(3600));
/// ```
pub struct TestSystem {
    runner: actix_rt::SystemRunner,
}

impl TestSystem {
    /// A system whose tokio time starts paused (auto-advancing when idle).
    ///
    /// ```
    /// let out = actlet::testing::TestSystem::paused().block_on(async { 1 + 1 });
    /// assert_eq!(out, 2);
    /// ```
    ///
    /// # Panics
    /// If the tokio runtime cannot be built.
    pub fn paused() -> Self {
        Self::build(true)
    }

    /// A system on real time (for tests that talk to real processes).
    ///
    /// ```
    /// let out = actlet::testing::TestSystem::real_time().block_on(async { "done" });
    /// assert_eq!(out, "done");
    /// ```
    ///
    /// # Panics
    /// If the tokio runtime cannot be built.
    pub fn real_time() -> Self {
        Self::build(false)
    }

    fn build(paused: bool) -> Self {
        init_test_logging();
        let runner = actix_rt::System::with_tokio_rt(move || {
            let mut builder = tokio::runtime::Builder::new_current_thread();
            builder.enable_all().start_paused(paused);
            builder
                .build()
                .unwrap_or_else(|e| panic!("cannot build the test tokio runtime: {e}"))
        });
        Self { runner }
    }

    /// Runs `fut` to completion inside the system and returns its output.
    /// Actors it started stay alive until the system is dropped.
    ///
    /// ```
    /// use actlet::testing::TestSystem;
    ///
    /// let system = TestSystem::paused();
    /// assert_eq!(system.block_on(async { 1 }), 1);
    /// assert_eq!(system.block_on(async { 2 }), 2); // the same system again
    /// ```
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        self.runner.block_on(fut)
    }
}

impl std::fmt::Debug for TestSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestSystem")
    }
}

/// Runs `fut` in a fresh [`TestSystem::paused`] and returns its output: the
/// usual body of an actor-level test.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, run_paused};
///
/// let phase = run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
///     node.kubelet().phase_of_named("default", "web")
/// });
/// assert_eq!(phase.as_deref(), Some("Running"));
/// ```
pub fn run_paused<F: Future>(fut: F) -> F::Output {
    TestSystem::paused().block_on(fut)
}

/// Installs a test-output `tracing` subscriber once, if `RUST_LOG` is set.
fn init_test_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}
