//! `/actuator/prometheus`: the registry's metrics under Resilience4j's
//! names, in the Prometheus text format.
//!
//! Each scrape publishes the registry into the actuator's own recorder
//! (`metrics::with_local_recorder`: no global recorder is installed, so the
//! application's own exporter is untouched) and renders it. Counters get
//! the `_total` suffix Micrometer's Prometheus registry gives them:
//! `resilience4j_retry_calls_total{kind="failed_with_retry",name="backendA"}`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::Shared;

pub(crate) async fn scrape(State(ctx): Shared) -> Response {
    metrics::with_local_recorder(&ctx.prometheus, || ctx.registry.publish_metrics());
    let text = with_total_suffix(&ctx.prometheus.handle().render());
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Renames every counter `x` (declared by `# TYPE x counter`) to `x_total`
/// in its `# HELP`, `# TYPE` and sample lines.
pub(crate) fn with_total_suffix(text: &str) -> String {
    let counters: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .filter(|name| !name.ends_with("_total"))
        .collect();
    let mut out = String::with_capacity(text.len() + counters.len() * 16);
    for line in text.lines() {
        let renamed = counters.iter().find_map(|name| {
            for prefix in ["# HELP ", "# TYPE ", ""] {
                if let Some(rest) = line.strip_prefix(prefix).and_then(|l| l.strip_prefix(name)) {
                    if rest.starts_with(' ') || rest.starts_with('{') {
                        return Some(format!("{prefix}{name}_total{rest}"));
                    }
                }
            }
            None
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::with_total_suffix;

    #[test]
    fn counters_get_total_and_gauges_keep_their_names() {
        let text = "# TYPE resilience4j_retry_calls counter\n\
                    resilience4j_retry_calls{kind=\"failed_with_retry\",name=\"backendA\"} 3\n\
                    # TYPE resilience4j_retry_calls_x gauge\n\
                    resilience4j_retry_calls_x{name=\"a\"} 1\n";
        let out = with_total_suffix(text);
        assert!(out.contains("# TYPE resilience4j_retry_calls_total counter\n"));
        assert!(out.contains(
            "resilience4j_retry_calls_total{kind=\"failed_with_retry\",name=\"backendA\"} 3\n"
        ));
        assert!(
            out.contains("resilience4j_retry_calls_x{name=\"a\"} 1\n"),
            "{out}"
        );
        assert!(!out.contains("resilience4j_retry_calls_x_total"));
    }
}
