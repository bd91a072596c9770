//! Why a System One server could not start.

/// Why a System One server could not start: a setting that cannot work
/// ([`is_input`](ServeError::is_input)) or an address it cannot listen on.
/// Messages name the setting as `toolnexus serve` spells it.
///
/// ```
/// # async fn f() {
/// use toolnexus_server::systemone::listen;
/// let e = listen("8787").await.unwrap_err();
/// assert!(e.is_input());
/// assert_eq!(
///     e.to_string(),
///     "--addr \"8787\": want HOST:PORT, e.g. 127.0.0.1:8787 or localhost:8787 (port 0 picks a free one)"
/// );
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is not `HOST:PORT`.
    #[error(
        "--addr {addr:?}: want HOST:PORT, e.g. 127.0.0.1:8787 or localhost:8787 (port 0 picks a free one)"
    )]
    NotHostPort {
        /// The address as given.
        addr: String,
    },
    /// The host name does not resolve.
    #[error("--addr {addr}: cannot resolve the host: {source}")]
    Resolve {
        /// The address as given.
        addr: String,
        /// What the resolver said.
        source: std::io::Error,
    },
    /// No address the host resolves to could be bound.
    #[error("--addr {addr}: cannot listen: {reason}")]
    Listen {
        /// The address as given.
        addr: String,
        /// The last address tried and why it failed.
        reason: String,
    },
    /// The bound socket has no local address.
    #[error("--addr {addr}: {source}")]
    LocalAddr {
        /// The address as given.
        addr: String,
        /// What the socket said.
        source: std::io::Error,
    },
    /// The key variable cannot be read: unnamed, unset, empty or not UTF-8.
    #[error("{0}")]
    KeyEnv(String),
}

impl ServeError {
    /// Whether a setting is at fault (the caller must change it), rather than
    /// the machine (an address in use, a socket that failed).
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            ServeError::NotHostPort { .. } | ServeError::Resolve { .. } | ServeError::KeyEnv(_)
        )
    }
}
