//! The `resil.http` status sets applied to a program's own error types:
//! a registered error type whose variant wraps a downstream's answer
//! (`#[error_class(http)]`, see [`ErrorClass::http_status`]) is classified
//! by the sets the file gives the instance's name, so a rule such as "a 404
//! is not a failure" is written once, in the file, and a reload that changes
//! it rebuilds the instances it applies to.

use crate::config::{FileConfig, HttpEntry, StatusKey};
use crate::ErrorClass;

/// What carries an HTTP status: the field of a variant marked
/// `#[error_class(http)]` in a `#[derive(resil::ErrorClass)]` enum. The
/// derive's [`ErrorClass::http_status`] reads it, and the registry classifies
/// the enum's values by the `resil.http` sets of the instance's name: a rule
/// such as `ignore-status: [404]` is written once, in the file, and holds
/// for the fn's own error type. resil-web's `HttpError` implements it; for
/// a type of your own it is one fn.
///
/// ```
/// use resil_registry::HttpStatus;
///
/// struct Answer { status: u16 }
/// impl HttpStatus for Answer {
///     fn http_status(&self) -> Option<u16> {
///         Some(self.status)
///     }
/// }
/// assert_eq!(Answer { status: 404 }.http_status(), Some(404));
/// ```
pub trait HttpStatus {
    /// The status, or `None` when there was no answer (a transport error).
    fn http_status(&self) -> Option<u16>;
}

/// How a status counts, by the sets of one `resil.http` entry (each key it
/// does not give keeps its default: failures `408, 429, 500-599`, no
/// ignored status, no success list).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusVerdicts {
    record: Vec<(u16, u16)>,
    ignore: Vec<(u16, u16)>,
    success: Option<Vec<(u16, u16)>>,
}

/// Whether the breaker counts an error carrying a status: a failure, or
/// not at all (an ignored status, or one the sets make a success: an error
/// value is not a successful call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusOutcome {
    Failure,
    NotAFailure,
}

const DEFAULT_RECORD: [(u16, u16); 3] = [(408, 408), (429, 429), (500, 599)];

fn contains(ranges: &[(u16, u16)], status: u16) -> bool {
    ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status))
}

impl StatusVerdicts {
    /// The sets `file` gives `name` under `resil.http.instances`, if any.
    pub(crate) fn for_name(file: &FileConfig, name: &str) -> Option<StatusVerdicts> {
        file.http().instance(name).map(StatusVerdicts::of)
    }

    fn of(entry: &HttpEntry) -> StatusVerdicts {
        let ranges = |key| entry.get(key).map(|l| l.ranges().to_vec());
        StatusVerdicts {
            record: ranges(StatusKey::RecordStatus).unwrap_or_else(|| DEFAULT_RECORD.to_vec()),
            ignore: ranges(StatusKey::IgnoreStatus).unwrap_or_default(),
            success: ranges(StatusKey::SuccessStatus),
        }
    }

    /// How `status` counts: ignored first, then a failure if recorded or
    /// outside a given success list, else not a failure (as resil-web's
    /// `HttpClassifier` decides).
    pub(crate) fn outcome(&self, status: u16) -> StatusOutcome {
        if contains(&self.ignore, status) {
            return StatusOutcome::NotAFailure;
        }
        let outside_success = self.success.as_ref().is_some_and(|s| !contains(s, status));
        if contains(&self.record, status) || outside_success {
            StatusOutcome::Failure
        } else {
            StatusOutcome::NotAFailure
        }
    }

    /// Whether `error` carries a status these sets do not count as a failure.
    pub(crate) fn spares<E: ErrorClass>(&self, error: &E) -> bool {
        error
            .http_status()
            .is_some_and(|s| self.outcome(s) == StatusOutcome::NotAFailure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_then_recorded_then_success_list_as_the_http_classifier_decides() {
        let defaults = StatusVerdicts {
            record: DEFAULT_RECORD.to_vec(),
            ignore: Vec::new(),
            success: None,
        };
        assert_eq!(defaults.outcome(503), StatusOutcome::Failure);
        assert_eq!(defaults.outcome(429), StatusOutcome::Failure);
        assert_eq!(defaults.outcome(404), StatusOutcome::NotAFailure);
        let strict = StatusVerdicts {
            record: vec![(400, 599)],
            ignore: vec![(404, 404)],
            success: Some(vec![(200, 299)]),
        };
        assert_eq!(strict.outcome(404), StatusOutcome::NotAFailure);
        assert_eq!(strict.outcome(400), StatusOutcome::Failure);
        assert_eq!(
            strict.outcome(302),
            StatusOutcome::Failure,
            "outside the success list"
        );
    }
}
