//! The toolnexus servers as a library: a built classifier stack behind the
//! System One HTTP wire ([`systemone`]), and judgments as MCP tools over
//! standard input and output ([`mcp`]).
//!
//! Each server takes a stack already built (by `toolnexus-stack`, from any
//! style or engine), a plain struct of settings, and a [`Log`] the caller
//! hands in for what the server says on its own (the access log, refusals,
//! warnings). Start-up lines are the caller's: a server only reports its
//! address and how it stopped. The command line's `toolnexus serve` and
//! `toolnexus mcp` are thin adapters over this crate; bindings call it too.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolnexus_server::systemone::{ServeConfig, Server};
//! use toolnexus_server::{Backend, Stderr, shutdown_signal};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let stack = toolnexus_stack::build(&toolnexus_stack::StackSpec {
//!     style: Some("systemone".into()),
//!     base_url: Some("http://127.0.0.1:9/v1".into()),
//!     ..Default::default()
//! })?;
//! let server = Server::bind(
//!     "127.0.0.1:8787",
//!     Backend::from_stack(&stack),
//!     ServeConfig::default(),
//!     Arc::new(Stderr::default()),
//! )
//! .await?;
//! println!("listening on http://{}", server.local_addr());
//! let stopped = server.run(shutdown_signal()).await;
//! assert_eq!(stopped.cut, 0);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod backend;
mod log;
pub mod mcp;
mod signal;
pub mod systemone;
pub mod wire;

pub use backend::Backend;
pub use log::{Log, Stderr};
pub use signal::shutdown_signal;
