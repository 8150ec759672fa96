//! Just enough HTTP/1.1 for the example, on hyper: a server that runs until
//! it is stopped, a one-connection-per-request client, JSON replies and query
//! strings.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Every reply this program sends: a whole body in memory.
pub type Reply = Response<Full<Bytes>>;

/// A JSON reply.
pub fn json(status: StatusCode, value: &serde_json::Value) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(value.to_string())));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

/// A JSON error reply: `{"error": message}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Reply {
    json(status, &serde_json::json!({ "error": message.into() }))
}

/// A server accepting connections on its own task until stopped or dropped.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0: any free port) and serves every request with
    /// `handler`, each connection on its own task.
    pub async fn start<H, F>(addr: SocketAddr, handler: H) -> io::Result<Server>
    where
        H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
        F: Future<Output = Reply> + Send + 'static,
    {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let handler = Arc::new(handler);
        let task = tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) => {
                            eprintln!("accept on {addr} failed: {e}");
                            continue;
                        }
                    },
                    _ = stopped.changed() => return,
                };
                let handler = Arc::clone(&handler);
                let mut stopped = stopped.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let reply = handler(req);
                        async move { Ok::<_, Infallible>(reply.await) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => {}
                        // Finish the request in flight, then close.
                        _ = stopped.changed() => {
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                });
            }
        });
        Ok(Server {
            addr,
            stop,
            task: Some(task),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets the requests in flight finish, and waits for the
    /// accept loop to end.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// A reply as the client sees it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, as text.
    pub body: String,
}

impl Answer {
    /// The body parsed as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Aborts the connection task when the request is done or dropped (a time
/// limiter dropping the request closes the socket).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn io_error(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::other(e)
}

/// Sends one request on a new connection and reads the whole reply.
pub async fn send(addr: SocketAddr, method: Method, path_and_query: &str) -> io::Result<Answer> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io_error)?;
    let _connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let request = Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .map_err(io_error)?;
    let reply = sender.send_request(request).await.map_err(io_error)?;
    let status = reply.status();
    let headers = reply.headers().clone();
    let body = reply.into_body().collect().await.map_err(io_error)?;
    Ok(Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    })
}

/// `GET path` on `addr`.
pub async fn get(addr: SocketAddr, path: &str) -> io::Result<Answer> {
    send(addr, Method::GET, path).await
}

/// `POST path` on `addr`, without a body (parameters go in the query).
pub async fn post(addr: SocketAddr, path: &str) -> io::Result<Answer> {
    send(addr, Method::POST, path).await
}

/// The query string's parameters, percent-decoded (`+` is a space).
pub fn query(req: &Request<Incoming>) -> HashMap<String, String> {
    req.uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

/// Percent-decoding; a malformed escape is kept as written.
fn decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'+', _, _) => out.push(b' '),
            (b'%', Some(hi), Some(lo)) if hex(hi).is_some() && hex(lo).is_some() => {
                out.push((hex(hi).unwrap_or(0) * 16 + hex(lo).unwrap_or(0)) as u8);
                i += 2;
            }
            (byte, _, _) => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes a query value (the demo and the tests build URLs with it).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
