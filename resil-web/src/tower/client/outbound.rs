//! Deadlines over the wire, the client's half: what is left of the task's
//! deadline goes out with each request, less a margin.

use std::time::Duration;

use http::header::HeaderName;
use http::HeaderMap;
use resil_core::deadline;

use crate::tower::deadline::{
    budget_of, grpc_timeout_value, is_grpc, millis_value, DEFAULT_TIMEOUT_HEADER, GRPC_TIMEOUT,
};

/// The margin taken off the budget a request carries by default (5 ms):
/// the hop there and back and the callee's own parsing, so that the callee
/// gives up a little before its caller does and its answer still arrives.
pub const DEFAULT_DEADLINE_MARGIN: Duration = Duration::from_millis(5);

/// How a client layer sends the task's deadline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outbound {
    pub(crate) header: HeaderName,
    pub(crate) margin: Duration,
}

impl Default for Outbound {
    fn default() -> Self {
        Outbound {
            header: DEFAULT_TIMEOUT_HEADER,
            margin: DEFAULT_DEADLINE_MARGIN,
        }
    }
}

/// The budget left was no more than the margin: the request is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spent;

impl Outbound {
    /// Writes what is left of the task's deadline, less the margin, into
    /// `headers`: `grpc-timeout` for a gRPC request, the millisecond header
    /// otherwise (a budget the caller set already is kept if it is
    /// shorter). Outside any deadline, writes nothing. `Err(Spent)` when no
    /// more than the margin is left: the callee could not use it.
    pub(crate) fn stamp(&self, headers: &mut HeaderMap) -> Result<(), Spent> {
        let Some(left) = deadline::remaining() else {
            return Ok(());
        };
        if left <= self.margin {
            return Err(Spent);
        }
        let mut budget = left - self.margin;
        if let Some(set) = budget_of(headers, &self.header) {
            budget = budget.min(set);
        }
        if is_grpc(headers) {
            headers.insert(GRPC_TIMEOUT, grpc_timeout_value(budget));
        } else {
            headers.insert(self.header.clone(), millis_value(budget));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_rest_of_the_deadline_goes_out_less_the_margin_and_a_spent_one_not_at_all() {
        let out = Outbound::default();
        let mut h = HeaderMap::new();
        out.stamp(&mut h).unwrap();
        assert!(h.is_empty(), "no deadline, no header");
        deadline::within(Duration::from_millis(800), async {
            out.stamp(&mut h).unwrap();
            assert_eq!(h[&DEFAULT_TIMEOUT_HEADER], "795");
            h.insert(
                http::header::CONTENT_TYPE,
                "application/grpc".parse().unwrap(),
            );
            out.stamp(&mut h).unwrap();
            assert_eq!(h[GRPC_TIMEOUT], "795000u");
            tokio::time::sleep(Duration::from_millis(795)).await;
            assert_eq!(out.stamp(&mut h), Err(Spent));
        })
        .await
        .unwrap();
    }
}
