//! One module per subcommand. Each validates its arguments into library options,
//! calls the library, and returns the exit code it ended with.

use anyhow::Result;

use crate::args::{
    CacheCommand, Cli, Command, CostCommand, GuardCommand, McpCommand, ModelCommand, TapeCommand,
};
use crate::exit::Exit;

pub mod assess;
pub mod batch;
pub mod cache;
pub mod cost;
pub mod distill;
pub mod eval;
pub mod guard;
pub mod install;
pub mod lint;
pub mod mcp;
pub mod model;
pub mod probe;
pub mod serve;
pub mod tape;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<Exit> {
    match cli.command {
        Command::Eval(a) => eval::run(a).await,
        Command::Batch(a) => batch::run(*a).await,
        Command::Tape(TapeCommand::Record(a)) => tape::record(*a).await,
        Command::Tape(TapeCommand::Replay(a)) => tape::replay(a).await,
        Command::Tape(TapeCommand::Show(a)) => tape::show(a),
        Command::Serve(a) => serve::run(a).await,
        Command::Assess(a) => assess::run(a).await,
        Command::Cache(CacheCommand::Stats(a)) => cache::stats(a),
        Command::Cache(CacheCommand::Clear(a)) => cache::clear(a),
        Command::Cache(CacheCommand::Export(a)) => cache::export(a),
        Command::Distill(a) => distill::run(a),
        Command::Model(ModelCommand::Fetch(a)) => model::fetch(a).await,
        Command::Guard(a) => match a.command.clone() {
            None => guard::run(a).await,
            Some(GuardCommand::CheckPolicy(c)) => guard::check_policy(c),
            Some(GuardCommand::Test(t)) => guard::test(*t).await,
            Some(GuardCommand::Install(i)) => install::guard_install(i),
            Some(GuardCommand::Uninstall(i)) => install::guard_uninstall(i),
            Some(GuardCommand::Explain(e)) => guard::explain(*e).await,
            Some(GuardCommand::Log(l)) => guard::log_summary(l),
            Some(GuardCommand::VerifyLog(l)) => guard::verify_log(l),
        },
        Command::Mcp(a) => match a.command.clone() {
            None => mcp::run(a).await,
            Some(McpCommand::Install(i)) => install::mcp_install(i),
            Some(McpCommand::Uninstall(i)) => install::mcp_uninstall(i),
        },
        Command::Lint(a) => lint::run(a),
        Command::Probe(a) => probe::run(a).await,
        Command::Cost(CostCommand::Fit(a)) => cost::fit(a),
    }
}
