//! The body the client sends downstream: a buffered copy (replayable), or
//! the caller's body as it comes (sent once), after whatever prefix was
//! read before the client knew it could not keep it all.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// A request body as the client layer sends it: the inner service's body
/// type is `ReplayBody<B>` for a caller's `B`.
///
/// Every form yields the caller's bytes in order and ends as the caller's
/// body ends (with its trailers, or its error).
pub struct ReplayBody<B: Body> {
    state: State<B>,
}

enum State<B: Body> {
    /// The whole body, buffered: every attempt sends a copy (a reference
    /// count, not the bytes).
    Whole {
        data: Option<Bytes>,
        trailers: Option<HeaderMap>,
    },
    /// What was read before the body turned out larger than the bound, then
    /// the rest as it comes.
    Stream { prefix: Option<Bytes>, rest: B },
    /// What was read before the caller's body failed, then its error.
    Failed {
        prefix: Option<Bytes>,
        error: Option<B::Error>,
    },
}

impl<B: Body> ReplayBody<B> {
    /// A buffered body (what a replayable request sends on every attempt).
    pub(crate) fn whole(data: Bytes, trailers: Option<HeaderMap>) -> Self {
        ReplayBody {
            state: State::Whole {
                data: (!data.is_empty()).then_some(data),
                trailers,
            },
        }
    }

    /// The caller's body, untouched (sent once).
    pub(crate) fn stream(prefix: Bytes, rest: B) -> Self {
        ReplayBody {
            state: State::Stream {
                prefix: (!prefix.is_empty()).then_some(prefix),
                rest,
            },
        }
    }

    fn failed(prefix: Bytes, error: B::Error) -> Self {
        ReplayBody {
            state: State::Failed {
                prefix: (!prefix.is_empty()).then_some(prefix),
                error: Some(error),
            },
        }
    }
}

// Nothing in a `ReplayBody` is pinned but the caller's body, which is
// `Unpin`: the buffered parts and the error move freely.
impl<B: Body + Unpin> Unpin for ReplayBody<B> {}

impl<B: Body + Unpin> Body for ReplayBody<B>
where
    B::Data: Buf,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        // `State<B>` is `Unpin` when `B` is (the rest of it is).
        match &mut self.get_mut().state {
            State::Whole { data, trailers } => Poll::Ready(match data.take() {
                Some(data) => Some(Ok(Frame::data(data))),
                None => trailers.take().map(|t| Ok(Frame::trailers(t))),
            }),
            State::Stream { prefix, rest } => {
                if let Some(prefix) = prefix.take() {
                    return Poll::Ready(Some(Ok(Frame::data(prefix))));
                }
                Pin::new(rest).poll_frame(cx).map(|frame| {
                    frame.map(|f| f.map(|f| f.map_data(|mut d| d.copy_to_bytes(d.remaining()))))
                })
            }
            State::Failed { prefix, error } => Poll::Ready(match prefix.take() {
                Some(prefix) => Some(Ok(Frame::data(prefix))),
                None => error.take().map(Err),
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            State::Whole { data, trailers } => data.is_none() && trailers.is_none(),
            State::Stream { prefix, rest } => prefix.is_none() && rest.is_end_stream(),
            State::Failed { prefix, error } => prefix.is_none() && error.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Whole { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            State::Stream { prefix, rest } => {
                let before = prefix.as_ref().map_or(0, |p| p.len() as u64);
                let hint = rest.size_hint();
                let mut sum = SizeHint::new();
                sum.set_lower(hint.lower().saturating_add(before));
                if let Some(upper) = hint.upper() {
                    sum.set_upper(upper.saturating_add(before));
                }
                sum
            }
            State::Failed { .. } => SizeHint::new(),
        }
    }
}

impl<B: Body> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = match &self.state {
            State::Whole { .. } => "whole",
            State::Stream { .. } => "stream",
            State::Failed { .. } => "failed",
        };
        f.debug_struct("ReplayBody").field("form", &form).finish()
    }
}

/// A caller's body after the client tried to keep it.
pub(crate) enum Buffered<B: Body> {
    /// All of it, within the bound: replayable.
    Whole(Bytes, Option<HeaderMap>),
    /// Larger than the bound, or broken off: send once, as it is.
    Once(ReplayBody<B>),
}

/// Reads `body` into memory while it stays within `max` bytes. A body that
/// says it is larger is not read at all. A body of one chunk (an in-memory
/// body: `Full`, `axum::body::Body::from(bytes)`) is kept as that chunk,
/// not copied; only a second chunk makes the client join them.
pub(crate) async fn buffer<B: Body + Unpin>(mut body: B, max: usize) -> Buffered<B>
where
    B::Data: Buf,
{
    if body.size_hint().lower() > max as u64 {
        return Buffered::Once(ReplayBody::stream(Bytes::new(), body));
    }
    let mut kept = Kept::Empty;
    let mut trailers: Option<HeaderMap> = None;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Buffered::Whole(kept.into_bytes(), trailers),
            Some(Err(error)) => {
                return Buffered::Once(ReplayBody::failed(kept.into_bytes(), error))
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(mut data) => {
                    let chunk = data.copy_to_bytes(data.remaining());
                    let over = kept.len() + chunk.len() > max;
                    kept.push(chunk);
                    if over {
                        return Buffered::Once(ReplayBody::stream(kept.into_bytes(), body));
                    }
                }
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        trailers.get_or_insert_with(HeaderMap::new).extend(t);
                    }
                }
            },
        }
    }
}

/// The bytes read so far: nothing, one chunk as it came, or several joined.
enum Kept {
    Empty,
    One(Bytes),
    Joined(BytesMut),
}

impl Kept {
    fn len(&self) -> usize {
        match self {
            Kept::Empty => 0,
            Kept::One(b) => b.len(),
            Kept::Joined(b) => b.len(),
        }
    }

    fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::replace(self, Kept::Empty) {
            Kept::Empty => Kept::One(chunk),
            Kept::One(first) => {
                let mut joined = BytesMut::with_capacity(first.len() + chunk.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&chunk);
                Kept::Joined(joined)
            }
            Kept::Joined(mut joined) => {
                joined.extend_from_slice(&chunk);
                Kept::Joined(joined)
            }
        };
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Kept::Empty => Bytes::new(),
            Kept::One(b) => b,
            Kept::Joined(b) => b.freeze(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of the given chunks, then the given end.
    struct Chunks(Vec<Result<Bytes, &'static str>>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = &'static str;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, &'static str>>> {
            Poll::Ready(if self.0.is_empty() {
                None
            } else {
                Some(self.0.remove(0).map(Frame::data))
            })
        }
    }

    fn chunks(items: &[Result<&'static str, &'static str>]) -> Chunks {
        Chunks(
            items
                .iter()
                .map(|r| r.map(|s| Bytes::from_static(s.as_bytes())))
                .collect(),
        )
    }

    async fn collect(body: ReplayBody<Chunks>) -> Result<Vec<u8>, &'static str> {
        let mut body = body;
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(data) = frame?.into_data() {
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_body_within_the_bound_is_kept_whole_and_one_chunk_is_not_copied() {
        let one = Bytes::from_static(b"sku=42");
        let Buffered::Whole(kept, None) = buffer(Chunks(vec![Ok(one.clone())]), 64).await else {
            panic!("not kept")
        };
        assert_eq!(kept.as_ptr(), one.as_ptr(), "the chunk itself, not a copy");
        let Buffered::Whole(kept, None) = buffer(chunks(&[Ok("ab"), Ok("cd"), Ok("e")]), 5).await
        else {
            panic!("not kept")
        };
        assert_eq!(kept, "abcde");
    }

    #[tokio::test]
    async fn a_larger_or_broken_body_is_sent_once_with_every_byte_in_order() {
        let Buffered::Once(body) = buffer(chunks(&[Ok("ab"), Ok("cd"), Ok("ef")]), 3).await else {
            panic!("kept")
        };
        assert_eq!(collect(body).await.unwrap(), b"abcdef");
        let Buffered::Once(body) = buffer(chunks(&[Ok("ab"), Err("reset")]), 64).await else {
            panic!("kept")
        };
        assert_eq!(collect(body).await, Err("reset"));
    }
}
