//! The inbound deadline layer.

use http::header::HeaderName;
use tower_layer::Layer;

use super::service::Deadline;
use super::wire::DEFAULT_TIMEOUT_HEADER;

/// Runs each request's handler inside the deadline its `grpc-timeout` or
/// timeout header gives (see the [module docs](super)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct DeadlineLayer {
    header: HeaderName,
}

impl DeadlineLayer {
    /// Reads `grpc-timeout` and [`DEFAULT_TIMEOUT_HEADER`].
    pub fn new() -> Self {
        DeadlineLayer {
            header: DEFAULT_TIMEOUT_HEADER,
        }
    }

    /// Reads the budget in whole milliseconds from `header` instead of
    /// [`DEFAULT_TIMEOUT_HEADER`] (`grpc-timeout` is always read).
    pub fn header(mut self, header: HeaderName) -> Self {
        self.header = header;
        self
    }
}

impl Default for DeadlineLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline::new(inner, self.header.clone())
    }
}
