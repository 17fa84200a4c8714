//! Pure: validation of a container's own `restartPolicy` and
//! `restartPolicyRules` (KEP-5307) for pods from files and URLs, which no
//! API server has validated (upstream `validateContainerRestartPolicy` and
//! `validateContainerRestartRules`).

use k8s_openapi::api::core::v1::Container;

use super::validate::FieldError;
use crate::container_restart::ACTION_RESTART;

/// Upstream's limit on the exit codes one rule may list.
const MAX_EXIT_CODES: usize = 255;

/// Validates the restart policy and rules of the container at `path`;
/// `init` for an init container (`Always` there makes it a sidecar, which
/// takes no rules).
///
/// ```
/// use actlet::config::validate_restart::validate_container_restart;
/// let c: k8s_openapi::api::core::v1::Container = serde_json::from_value(serde_json::json!({
///     "name": "c", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
/// })).unwrap();
/// let err = validate_container_restart("spec.containers[0]", &c, false).unwrap_err();
/// assert_eq!(err.to_string(), "spec.containers[0].restartPolicyRules: Forbidden: may only be set when restartPolicy is set");
/// ```
pub fn validate_container_restart(path: &str, c: &Container, init: bool) -> Result<(), FieldError> {
    let policy = c.restart_policy.as_deref();
    if let Some(p) = policy
        && !["Always", "OnFailure", "Never"].contains(&p)
    {
        return Err(FieldError::new(
            format!("{path}.restartPolicy"),
            format!("Unsupported value: {p:?}: supported values: \"Always\", \"Never\", \"OnFailure\""),
        ));
    }
    let Some(rules) = c.restart_policy_rules.as_deref().filter(|r| !r.is_empty()) else {
        return Ok(());
    };
    let at = format!("{path}.restartPolicyRules");
    match policy {
        None => {
            return Err(FieldError::new(
                at,
                "Forbidden: may only be set when restartPolicy is set",
            ));
        }
        Some("Always") if init => {
            return Err(FieldError::new(
                at,
                "Forbidden: may not be set for init containers with restartPolicy=Always",
            ));
        }
        Some(_) => {}
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if rule.action != ACTION_RESTART {
            return Err(FieldError::new(
                format!("{at}.action"),
                format!("Unsupported value: {:?}: supported values: \"Restart\"", rule.action),
            ));
        }
        let Some(codes) = &rule.exit_codes else {
            return Err(FieldError::new(format!("{at}.exitCodes"), "Required value"));
        };
        if !["In", "NotIn"].contains(&codes.operator.as_str()) {
            return Err(FieldError::new(
                format!("{at}.exitCodes.operator"),
                format!(
                    "Unsupported value: {:?}: supported values: \"In\", \"NotIn\"",
                    codes.operator
                ),
            ));
        }
        let values = codes.values.as_deref().unwrap_or_default();
        let values_at = format!("{at}.exitCodes.values");
        if values.is_empty() {
            return Err(FieldError::new(values_at, "Required value"));
        }
        if values.len() > MAX_EXIT_CODES {
            return Err(FieldError::new(
                values_at,
                format!("Too many: {}: must have at most {MAX_EXIT_CODES} items", values.len()),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some((j, v)) = values.iter().enumerate().find(|(_, v)| !seen.insert(**v)) {
            return Err(FieldError::new(
                format!("{values_at}[{j}]"),
                format!("Duplicate value: {v}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(json: serde_json::Value) -> Container {
        serde_json::from_value(json).expect("container")
    }

    fn err(json: serde_json::Value, init: bool) -> String {
        validate_container_restart("c", &container(json), init)
            .expect_err("invalid")
            .to_string()
    }

    #[test]
    fn policies_and_rules_that_upstream_accepts() {
        for json in [
            serde_json::json!({"name": "a"}),
            serde_json::json!({"name": "a", "restartPolicy": "Never"}),
            serde_json::json!({"name": "a", "restartPolicy": "OnFailure",
                "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0, 1]}}]}),
        ] {
            validate_container_restart("c", &container(json.clone()), false).expect("valid");
            validate_container_restart("c", &container(json), true).expect("valid init");
        }
        let sidecar = serde_json::json!({"name": "s", "restartPolicy": "Always"});
        validate_container_restart("c", &container(sidecar), true).expect("sidecar");
    }

    #[test]
    fn bad_policies_and_rules_name_the_field() {
        assert_eq!(
            err(serde_json::json!({"name": "a", "restartPolicy": "Sometimes"}), false),
            "c.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\", \"OnFailure\""
        );
        let rule = |r: serde_json::Value| serde_json::json!({"name": "a", "restartPolicy": "Never", "restartPolicyRules": [r]});
        assert_eq!(
            err(
                rule(serde_json::json!({"action": "Stop", "exitCodes": {"operator": "In", "values": [1]}})),
                false
            ),
            "c.restartPolicyRules[0].action: Unsupported value: \"Stop\": supported values: \"Restart\""
        );
        assert_eq!(
            err(rule(serde_json::json!({"action": "Restart"})), false),
            "c.restartPolicyRules[0].exitCodes: Required value"
        );
        assert!(
            err(
                rule(serde_json::json!({"action": "Restart", "exitCodes": {"operator": "Near", "values": [1]}})),
                false
            )
            .starts_with("c.restartPolicyRules[0].exitCodes.operator: Unsupported value: \"Near\"")
        );
        assert_eq!(
            err(
                rule(serde_json::json!({"action": "Restart", "exitCodes": {"operator": "In", "values": [3, 3]}})),
                false
            ),
            "c.restartPolicyRules[0].exitCodes.values[1]: Duplicate value: 3"
        );
        assert_eq!(
            err(
                rule(serde_json::json!({"action": "Restart", "exitCodes": {"operator": "In", "values": []}})),
                false
            ),
            "c.restartPolicyRules[0].exitCodes.values: Required value"
        );
        let sidecar = serde_json::json!({"name": "s", "restartPolicy": "Always",
            "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]});
        assert!(err(sidecar.clone(), true).contains("Forbidden: may not be set for init containers"));
        validate_container_restart("c", &container(sidecar), false).expect("a regular container may");
    }
}
