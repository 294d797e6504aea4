//! A node's accept loop: at most `max_connections` open at once, each
//! closed if it takes longer than `header_read_timeout` to send a request's
//! headers (or stays idle that long between requests). axum's own `serve`
//! has neither limit.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::limits::Limits;

/// Serves `router` on `listener` until `stop` fires; then lets the
/// connections finish their requests and close. Aborting the task that
/// runs this closes every connection at once.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &Limits,
    stop: impl Future<Output = ()>,
) {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        // A place first: past the limit, connections wait in the kernel's
        // queue rather than here.
        let place = tokio::select! {
            place = Arc::clone(&places).acquire_owned() => place,
            () = &mut stop => break,
        };
        let Ok(place) = place else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
            // Reaps finished connections, so the set stays as small as
            // the connections open.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, or a connection reset before it was
                // accepted: wait rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Raft's messages are small and answered at once.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let header_read_timeout = limits.header_read_timeout;
        let mut closed = closed.clone();
        connections.spawn(async move {
            let _place = place;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let connection = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let closing = async {
                let _ = closed.wait_for(|closing| *closing).await;
            };
            tokio::select! {
                _ = connection.as_mut() => {}
                () = closing => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
}
