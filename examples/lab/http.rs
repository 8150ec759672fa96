//! Just enough HTTP/1.1 on hyper for the lab: a server on `127.0.0.1:0` that
//! serves every request with one handler until it is dropped, and a client
//! that opens one connection per request (so every request the lab sends is
//! one request the server counts).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::HOST;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What a lab server answers: a whole body in memory.
pub type Response = hyper::Response<Full<Bytes>>;

/// A reply from a lab server: a status and a short text body.
pub fn reply(status: StatusCode, body: impl Into<String>) -> Response {
    let mut reply = Response::new(Full::new(Bytes::from(body.into())));
    *reply.status_mut() = status;
    reply
}

/// A server accepting connections until it is dropped.
pub struct Server {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl Server {
    /// Binds any free port on 127.0.0.1 and answers every request with
    /// `handler(path)`, each connection on its own task.
    pub async fn start<H, F>(handler: H) -> io::Result<Server>
    where
        H: Fn(String) -> F + Send + Sync + 'static,
        F: Future<Output = Response> + Send + 'static,
    {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let handler = Arc::new(handler);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let reply = handler(req.uri().path().to_owned());
                        async move { Ok::<_, Infallible>(reply.await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Server { addr, accept })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// A reply as the client received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: StatusCode,
    /// The body, as text.
    pub body: String,
}

/// What went wrong before a whole reply arrived.
#[derive(Debug)]
pub enum Failure {
    /// No connection, or it broke.
    Io(String),
    /// The request was cancelled before it completed (its connection went
    /// away underneath it).
    Canceled,
}

impl From<hyper::Error> for Failure {
    fn from(e: hyper::Error) -> Failure {
        if e.is_canceled() {
            Failure::Canceled
        } else {
            Failure::Io(e.to_string())
        }
    }
}

/// Aborts the connection's task when the request is done or dropped: a
/// caller that stops waiting (a time limiter) closes the socket.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A request already on its way to the server: [`Pending::answer`] waits for
/// the reply.
pub struct Pending {
    reply: Box<dyn Future<Output = Result<hyper::Response<Incoming>, hyper::Error>> + Send + Unpin>,
    _connection: AbortOnDrop,
}

impl Pending {
    /// Waits for the whole reply.
    pub async fn answer(self) -> Result<Answer, Failure> {
        let Pending { reply, _connection } = self;
        let reply = reply.await?;
        let status = reply.status();
        let body = reply.into_body().collect().await?.to_bytes();
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

/// Opens a connection and sends `GET path`, without waiting for the reply.
pub async fn send(addr: SocketAddr, path: &str) -> Result<Pending, Failure> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| Failure::Io(e.to_string()))?;
    let (mut sender, connection): (SendRequest<Empty<Bytes>>, _) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let request = Request::get(path)
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .map_err(|e| Failure::Io(e.to_string()))?;
    Ok(Pending {
        reply: Box::new(Box::pin(sender.send_request(request))),
        _connection: connection,
    })
}

/// `GET path` on `addr`, and the whole reply.
pub async fn get(addr: SocketAddr, path: &str) -> Result<Answer, Failure> {
    send(addr, path).await?.answer().await
}
