//! The `actlet` node daemon: the command line only; everything else lives in
//! the library.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use actlet::actors::supervisor::ExitReason;
use actlet::cli::{Cli, Command, MockCriArgs, log_filter};
use actlet::cluster::{Qps, client_from_kubeconfig, heartbeat_client_from_kubeconfig};
use actlet::cri::client::{CriClient, parse_endpoint};
use actlet::cri::mock::MockRuntime;
use actlet::cri::server::CriServer;
use actlet::cri::{Runtime, v1};
use actlet::kubelet::{Extensions, KubeletConfig, start_with};
use actlet::kubelet_config_file::{self, Resolved, flags::explicit_flags};
use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;

/// The daemon allocates through jemalloc rather than glibc's malloc: under
/// a churn of pods (10,000 live, waves of 500 replaced) glibc's arenas kept
/// what each wave freed and the RSS climbed 40 % in 8 minutes, jemalloc's
/// decay returns it (+17 %, flat after the warm-up) and the waves ran faster
/// (docs/performance.md, session 24). The library sets no allocator: an
/// embedder keeps its own.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Some(Command::Version) = cli.command {
        println!(
            "actlet v{} ({}, CRI runtime.v1)",
            env!("CARGO_PKG_VERSION"),
            actlet::process::version::line()
        );
        return ExitCode::SUCCESS;
    }
    if let Some(v) = &cli.version {
        match actlet::process::version::for_flag(v) {
            Ok(Some(text)) => {
                println!("{text}");
                return ExitCode::SUCCESS;
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("actlet: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // The configuration is resolved before logging starts: it sets the verbosity.
    let resolved = match cli.command {
        None => match kubelet_config_file::resolve(&cli.flags, &explicit_flags(&matches)) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("actlet: {e}");
                return ExitCode::from(2);
            }
        },
        Some(_) => None,
    };
    let verbosity = resolved.as_ref().map_or(cli.flags.verbosity, |r| r.flags.verbosity);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(log_filter(verbosity)));
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match (cli.command, resolved) {
        (Some(Command::MockCri(args)), _) => mock_cri(args),
        (_, Some(resolved)) => {
            for w in &resolved.warnings {
                tracing::warn!("{w}");
            }
            tracing::info!(configuration = %resolved.masked_json(), "KubeletConfiguration");
            kubelet_config_file::effective::global().set(resolved.configz());
            run(resolved)
        }
        _ => ExitCode::SUCCESS,
    }
}

fn fatal(msg: impl std::fmt::Display) -> ExitCode {
    tracing::error!("{msg}");
    eprintln!("actlet: {msg}");
    ExitCode::FAILURE
}

fn mock_cri(args: MockCriArgs) -> ExitCode {
    let path = match parse_endpoint(&args.listen) {
        Ok(p) => p,
        Err(e) => return fatal(format!("--listen: {e}")),
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    // A mountpoint that exists: kubelets look the image filesystem up on the host.
    let image_fs = args.image_fs_dir();
    if let Err(e) = std::fs::create_dir_all(&image_fs) {
        return fatal(format!("--image-fs-dir {}: {e}", image_fs.display()));
    }
    rt.block_on(async move {
        let mock = Arc::new(MockRuntime::builder().image_fs_mountpoint(&image_fs).build());
        tracing::info!(socket = %path.display(), image_fs = %image_fs.display(), "serving the mock CRI runtime");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match CriServer::new(mock).serve(&path, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fatal(e),
        }
    })
}

fn run(resolved: Resolved) -> ExitCode {
    let mut flags = resolved.flags.clone();
    flags.absolutize_paths();
    let hostname = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    let mut config = match KubeletConfig::from_flags(&flags, &hostname) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("actlet: {e}");
            return ExitCode::from(2);
        }
    };
    resolved.apply_to(&mut config);
    if config.shutdown.enabled() {
        // Where systemd-logind runs, it is the trigger (SIGUSR1 stays one too).
        config.shutdown.logind = Some(actlet::nodeshutdown::logind::LogindTarget::system());
    }
    // held until actlet exits
    let _lock = match actlet::process::setup(&flags) {
        Ok(l) => l,
        Err(e) => return fatal(e),
    };
    let system = actix_rt::System::new();
    system.block_on(async move {
        if let (Some(kubeconfig), Some(bootstrap)) = (&flags.kubeconfig, &flags.bootstrap_kubeconfig) {
            let cert_dir = flags.cert_dir.clone().unwrap_or_else(|| flags.root_dir.join("pki"));
            let done = actlet::certificate::bootstrap::load_client_cert(
                kubeconfig,
                bootstrap,
                &cert_dir,
                &config.node_name,
                actlet::certificate::bootstrap::BOOTSTRAP_TIMEOUT,
            )
            .await;
            match done {
                Ok(outcome) => tracing::info!(?outcome, kubeconfig = %kubeconfig.display(), "TLS bootstrap"),
                Err(e) => return fatal(format!("TLS bootstrap with --bootstrap-kubeconfig {}: {e}", bootstrap.display())),
            }
        }
        let mut client_rotation = None;
        let api_client = match &flags.kubeconfig {
            Some(path) => {
                let qps = Qps {
                    qps: flags.kube_api_qps,
                    burst: flags.kube_api_burst,
                };
                // Upstream: min(nodeStatusUpdateFrequency, nodeLeaseDurationSeconds).
                let heartbeat_timeout = config.node_status_update_frequency.min(Duration::from_secs(40));
                let clients = tokio::try_join!(
                    client_from_kubeconfig(path, qps),
                    heartbeat_client_from_kubeconfig(path, heartbeat_timeout)
                );
                match clients {
                    Ok((bulk, heartbeat)) => {
                        tracing::info!(kubeconfig = %path.display(), node = %config.node_name, "cluster mode");
                        if !flags.rotate_certificates {
                            Some((bulk, heartbeat))
                        } else {
                            let target = actlet::certificate::client_manager::RotationTarget {
                                node_name: config.node_name.clone(),
                                cert_dir: flags.cert_dir.clone().unwrap_or_else(|| flags.root_dir.join("pki")),
                                kubeconfig: path.clone(),
                                qps,
                                heartbeat_timeout,
                            };
                            let (bulk, heartbeat, rotation) = target.wrap(bulk, heartbeat);
                            client_rotation = rotation;
                            Some((bulk, heartbeat))
                        }
                    }
                    Err(e) => return fatal(format!("--kubeconfig: {e}")),
                }
            }
            None => {
                tracing::info!("standalone mode: no API server; pod status is served on the read-only port only");
                None
            }
        };
        // The client's connection task needs the runtime, so it is made here.
        let client = match CriClient::new(&flags.container_runtime_endpoint, flags.runtime_request_timeout) {
            Ok(c) => c,
            Err(e) => return fatal(format!("--container-runtime-endpoint: {e}")),
        };
        match client.version(v1::VersionRequest { version: "v1".into() }).await {
            Ok(v) => tracing::info!(runtime = %v.runtime_name, version = %v.runtime_version, api = %v.runtime_api_version, "connected to the container runtime"),
            Err(e) => tracing::warn!(error = %e, "container runtime not reachable yet; pod syncs wait until it is"),
        }
        let deadline = config.shutdown_deadline;
        let (api_client, heartbeat_client) = api_client.unzip();
        let ext = Extensions {
            api_client,
            heartbeat_client,
            client_rotation,
            ..Extensions::default()
        };
        let kubelet = match start_with(config, Arc::new(client), ext) {
            Ok(k) => k,
            Err(e) => return fatal(e),
        };
        if flags.runonce {
            let report = actlet::process::runonce::run_once(&kubelet, actlet::process::runonce::default_timeout()).await;
            if let Err(e) = kubelet.shutdown(deadline).await {
                tracing::error!(error = %e, "shutdown failed");
            }
            return match report.error() {
                None => {
                    tracing::info!(pods = report.pods.len(), "started kubelet as runonce");
                    ExitCode::SUCCESS
                }
                Some(e) => fatal(format!("runonce failed: {e}")),
            };
        }
        // SIGUSR1: the node is about to shut down (upstream's kubelet takes the
        // same signal besides logind's PrepareForShutdown).
        let trigger = kubelet.node_shutdown_trigger();
        actix_rt::spawn(async move {
            let Ok(mut usr1) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()) else {
                tracing::warn!("cannot listen for SIGUSR1: graceful node shutdown has no trigger");
                return;
            };
            while usr1.recv().await.is_some() {
                tracing::info!("received shutdown signal from USR1");
                if let Err(e) = actlet::kubelet::node_shutdown(trigger.as_ref(), true) {
                    tracing::warn!(error = %e, "SIGUSR1 ignored");
                }
            }
        });
        let root = kubelet.root.clone();
        actix_rt::spawn(async move {
            if let Err(e) = actlet::actors::supervisor::shutdown_on_signals(&root, deadline).await {
                tracing::error!(error = %e, "shutdown failed");
            }
        });
        match kubelet.root.wait().await {
            ExitReason::Normal | ExitReason::Killed => {
                tracing::info!("actlet stopped");
                ExitCode::SUCCESS
            }
            other => fatal(format!("actlet stopped: {other:?}")),
        }
    })
}
