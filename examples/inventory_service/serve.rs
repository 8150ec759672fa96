//! An axum router on a port, until stopped.

use std::io;
use std::net::SocketAddr;

use axum::Router;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server on its own task; [`Server::stop`] lets requests in flight finish.
pub struct Server {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<io::Result<()>>,
}

impl Server {
    /// Binds `addr` (port 0: any free port) and serves `app`.
    pub async fn start(addr: SocketAddr, app: Router) -> io::Result<Server> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // With each connection's peer address, which the actuator's
            // management audit writes in its log lines.
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
        });
        Ok(Server { addr, stop, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, and waits for the requests in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Ok(Err(e)) = self.task.await {
            eprintln!("the server on {} stopped with an error: {e}", self.addr);
        }
    }
}
