//! The retry: its file options (the backoff keys become an interval
//! function), its error lists and its metrics.

use resil_core::event::EventStream;
use resil_core::retry::{Retry, RetryBudget, RetryBudgetConfig, RetryConfig, RetryConfigBuilder};

use super::bind;
use super::primitive;
use crate::classes::{ErrorClasses, ErrorList};
use crate::config::apply::{backoff, duration, get, Apply, Values};
use crate::config::bind::Bind;
use crate::config::render::{backoff_values, Render};
use crate::config::resolved::{ErrorNames, Resolved};
use crate::config::schema::Val;
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};

primitive!(Retry: RetryConfig => RetryConfigBuilder, Kind::Retry);

impl Hooks for Retry {
    type Settings = RetryConfigBuilder;
    type Twins = NoTwins;

    /// Retries have shadows: the staged settings judge the same attempts.
    fn start_shadow(
        handle: &crate::handle::Handle<Self>,
        config: &RetryConfig,
        trial: &crate::shadow::TrialContext,
    ) -> Option<Box<dyn crate::shadow::ShadowRun>> {
        Some(crate::shadow::Run::start(handle, config, trial))
    }

    /// A running shadow trial goes on beside the rebuilt instance.
    fn before_install(
        _overrides: &crate::overrides::Overrides,
        _name: &str,
        previous: &Self,
        next: &Self,
        _carried: bool,
    ) {
        resil_core::shadow::Shadowed::move_shadow_to(previous, next);
    }

    fn error_lists(entry: &Resolved<RetryConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        if let Some(names) = entry.retry_errors() {
            lists.push((names, ErrorList::RetryOn));
        }
        if let Some(names) = entry.ignore_errors() {
            lists.push((names, ErrorList::RetryIgnore));
        }
        for (key, list) in [
            ("retry-exception-predicate", ErrorList::RetryOnPredicate),
            ("result-predicate", ErrorList::RetryResultPredicate),
        ] {
            if let Some(names) = entry.predicate_names(key) {
                lists.push((names, list));
            }
        }
        lists
    }

    fn apply_error_list(
        classes: &ErrorClasses,
        builder: RetryConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> RetryConfigBuilder {
        classes.apply_retry(builder, list, names)
    }

    fn apply_http(
        classes: &ErrorClasses,
        builder: RetryConfigBuilder,
        file: &crate::config::FileConfig,
        name: &str,
    ) -> RetryConfigBuilder {
        classes.apply_http_retry(builder, file, name)
    }
}

bind! {
    RetryConfig => RetryConfigBuilder {
        "max-attempts" => U32: max_attempts,
        "fail-after-max-attempts" => Bool: fail_after_max_attempts,
    }
}

impl Apply for RetryConfig {
    fn builder_with(v: &Values) -> RetryConfigBuilder {
        let mut b = Self::apply_bound(RetryConfig::builder(), v);
        if let Some(x) = duration(v, "wait-duration") {
            b = b.wait_duration(x);
        }
        let wait = duration(v, "wait-duration").unwrap_or(RetryConfig::default().wait_duration());
        if let Some(f) = backoff(v, wait, "exponential-max-wait-duration") {
            b = b.interval_function(f);
        }
        if let Some(budget) = budget_with(None, v) {
            b = b.budget(RetryBudget::new(budget));
        }
        b
    }

    fn build(builder: RetryConfigBuilder) -> Result<Self, resil_core::ConfigError> {
        builder.build()
    }
}

impl Render for RetryConfig {
    const KIND: Kind = Kind::Retry;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        // With backoff, `wait-duration` is the interval function's first wait.
        let f = self.interval_function();
        let wait = f.initial().unwrap_or(self.wait_duration());
        let mut out = self.render_bound();
        out.push(("wait-duration", Some(Val::Duration(wait))));
        out.extend(backoff_values(Some(f), "exponential-max-wait-duration"));
        let budget = self.budget().map(|b| *b.config());
        out.extend([
            (
                "budget-retry-ratio",
                // Through its shortest text: `0.2`, not the f32's `0.200000003`.
                budget.map(|c| Val::F64(c.retry_ratio().to_string().parse().unwrap_or(0.0))),
            ),
            (
                "budget-min-retries-per-second",
                budget.map(|c| Val::U32(c.min_retries_per_second())),
            ),
            ("budget-window", budget.map(|c| Val::Duration(c.window()))),
        ]);
        out
    }
}

/// The retry budget the `budget-*` keys of `values` set over `base` (the
/// defaults when `None`): `None` when `values` sets none of them. The loader
/// checked each value, so the budget builds.
pub(crate) fn budget_with(
    base: Option<RetryBudgetConfig>,
    values: &Values,
) -> Option<RetryBudgetConfig> {
    let ratio = get(values, "budget-retry-ratio");
    let min = get(values, "budget-min-retries-per-second");
    let window = get(values, "budget-window");
    if ratio.is_none() && min.is_none() && window.is_none() {
        return None;
    }
    let base = base.unwrap_or_default();
    let mut b = RetryBudgetConfig::builder()
        .retry_ratio(base.retry_ratio())
        .min_retries_per_second(base.min_retries_per_second())
        .window(base.window());
    if let Some(Val::F64(r)) = ratio {
        b = b.retry_ratio(*r as f32);
    }
    if let Some(Val::U32(n)) = min {
        b = b.min_retries_per_second(*n);
    }
    if let Some(Val::Duration(d)) = window {
        b = b.window(*d);
    }
    b.build().ok()
}

const CALLS: Family = Family::new(
    "retry_calls",
    "Calls through the retry that ended, by outcome (kind): successful or failed, with or without a retry",
);
const ATTEMPTS: Family = Family::new(
    "retry_attempts",
    "Attempts made by the calls that ended: first attempts and retries",
);

impl Telemetry for Retry {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        vec![
            Metric::counter(
                CALLS,
                Some("successful_without_retry"),
                m.successful_calls_without_retry(),
            ),
            Metric::counter(
                CALLS,
                Some("successful_with_retry"),
                m.successful_calls_with_retry(),
            ),
            Metric::counter(
                CALLS,
                Some("failed_without_retry"),
                m.failed_calls_without_retry(),
            ),
            Metric::counter(
                CALLS,
                Some("failed_with_retry"),
                m.failed_calls_with_retry(),
            ),
            Metric::counter(ATTEMPTS, None, m.attempts()),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }
}

impl Describe for Retry {
    type Event = resil_core::retry::RetryEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&RetryConfig::default())
    }
}
