//! Ctrl-C and SIGTERM, listened to from the start of a run that stops
//! cleanly on either (batch, tape record).

use anyhow::Result;

/// Ctrl-C and (on Unix) SIGTERM, listened to from the start of a run.
pub struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening; `command` names who could not, should that fail.
    pub fn new(command: &str) -> Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind| {
                signal(kind)
                    .map_err(|e| anyhow::anyhow!("{command}: cannot listen for signals: {e}"))
            };
            Ok(Signals {
                int: listen(SignalKind::interrupt())?,
                term: listen(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = command;
            Ok(Signals {})
        }
    }

    /// The next Ctrl-C or SIGTERM (cancel-safe).
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
