//! grpc probes (upstream `pkg/probe/grpc`): `grpc.health.v1.Health/Check`
//! over plain-text HTTP/2, `SERVING` passes; connection and call share the
//! probe's timeout.

use std::time::Duration;

use tonic::Code;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::{Answer, PROBE_USER_AGENT, Raw, join_host_port};
use crate::kuberuntime::manager::go_duration_precise;

/// Upstream `grpcProber.Probe`.
pub async fn probe(host: &str, port: u16, service: &str, timeout: Duration) -> Answer {
    let addr = join_host_port(host, port);
    let fail = |m: String| Answer::new(Raw::Failure, m);
    let t = go_duration_precise(timeout);
    let endpoint = match Endpoint::from_shared(format!("http://{addr}")) {
        Ok(e) => e.connect_timeout(timeout),
        Err(e) => return fail(format!("error: failed to connect service at {addr:?}: {e}")),
    };
    let endpoint = match endpoint.user_agent(PROBE_USER_AGENT) {
        Ok(e) => e,
        Err(e) => return fail(format!("error: failed to connect service at {addr:?}: {e}")),
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let channel = match tokio::time::timeout_at(deadline, endpoint.connect()).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return fail(format!("error: failed to connect service at {addr:?}: {e}")),
        Err(_) => {
            return fail(format!(
                "timeout: failed to connect service {addr:?} within {t}: context deadline exceeded"
            ));
        }
    };
    let mut client = HealthClient::new(channel);
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    match tokio::time::timeout_at(deadline, client.check(request)).await {
        Err(_) => fail(format!("timeout: health rpc did not complete within {t}")),
        Ok(Err(s)) if s.code() == Code::Unimplemented => fail(format!(
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {}",
            s.message()
        )),
        Ok(Err(s)) if s.code() == Code::DeadlineExceeded => {
            fail(format!("timeout: health rpc did not complete within {t}"))
        }
        Ok(Err(s)) => fail(format!("error: health rpc probe failed: {s}")),
        Ok(Ok(resp)) => {
            let status = resp.into_inner().status;
            if status == ServingStatus::Serving as i32 {
                Answer::new(Raw::Success, "service healthy")
            } else {
                let name =
                    ServingStatus::try_from(status).map_or("UNKNOWN".to_string(), |s| s.as_str_name().to_string());
                fail(format!("service unhealthy (responded with {name:?})"))
            }
        }
    }
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
