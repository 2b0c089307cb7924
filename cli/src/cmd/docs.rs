//! `brainctl completions` and `brainctl man`: the shell completion script
//! (clap_complete) and the man pages (clap_mangen), both generated from
//! the same clap definition as `--help`, so they cannot drift from it.

use crate::args::Cli;
use crate::context::Context;
use crate::failure::CliResult;
use anyhow::Context as _;
use clap::CommandFactory;
use std::path::Path;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> CliResult<u8> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "brainctl", &mut std::io::stdout());
    Ok(0)
}

/// Prints brainctl.1, or writes it and one page per subcommand into
/// `out_dir` (created if missing).
pub fn man(out_dir: Option<&Path>, ctx: &Context) -> CliResult<u8> {
    let cmd = Cli::command();
    let Some(dir) = out_dir else {
        clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout())
            .context("writing the man page")?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    write_pages(&cmd, ("brainctl", "brainctl"), dir, &mut written)?;
    ctx.emit(
        &serde_json::json!({"ok": true, "dir": dir, "pages": written}),
        || format!("wrote {} man pages to {}", written.len(), dir.display()),
    );
    Ok(0)
}

/// Writes `cmd`'s page as `<file_name>.1` (`brainctl-marketplace-buy.1`,
/// as git and cargo name theirs; its synopsis reads `<usage>`, `brainctl
/// marketplace buy`) and recurses into its subcommands.
fn write_pages(
    cmd: &clap::Command,
    (file_name, usage): (&str, &str),
    dir: &Path,
    written: &mut Vec<String>,
) -> anyhow::Result<()> {
    let file = format!("{file_name}.1");
    let mut out = Vec::new();
    let page = cmd
        .clone()
        .display_name(file_name.to_string())
        .bin_name(usage.to_string());
    clap_mangen::Man::new(page)
        .render(&mut out)
        .with_context(|| format!("rendering {file}"))?;
    std::fs::write(dir.join(&file), out).with_context(|| format!("writing {file}"))?;
    written.push(file);
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = sub.get_name();
        write_pages(
            sub,
            (&format!("{file_name}-{name}"), &format!("{usage} {name}")),
            dir,
            written,
        )?;
    }
    Ok(())
}
