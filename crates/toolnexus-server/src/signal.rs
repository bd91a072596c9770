//! The signals that stop a server gracefully.

/// Resolves on Ctrl-C or, on Unix, SIGTERM: what a server's `run` takes to
/// stop accepting and drain. The handlers are installed when this is called,
/// not when it is first polled, so call it before the address is printed: a
/// signal sent as soon as the address is known then still stops the server
/// gracefully.
///
/// ```no_run
/// # async fn wait() {
/// let stop = toolnexus_server::shutdown_signal();
/// // … bind and print the address …
/// stop.await;
/// # }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let (mut int, mut term) = signals;
            let int = async {
                match int.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            };
            let term = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = int => {},
                _ = term => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
