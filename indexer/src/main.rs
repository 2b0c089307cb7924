//! `brainctl-indexer`: operator binary (subcommands land with the indexer issue).

fn main() -> std::process::ExitCode {
    eprintln!(
        "brainctl-indexer {} (state v{}): not implemented yet; see the indexer issue",
        env!("CARGO_PKG_VERSION"),
        indexer::STATE_VERSION
    );
    std::process::ExitCode::from(2)
}
