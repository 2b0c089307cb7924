//! A real MCP client (the official Python SDK, `support/mcp_client.py`)
//! driving `brainctl mcp`, for the tests that need an agent.

use serde_json::{json, Value};
use std::path::Path;

/// One MCP session: the client starts `brainctl mcp` with `server_args`,
/// runs `steps`, and reports each answer.
pub fn session(py: &Path, home: &Path, server_args: &[String], steps: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_client.py");
    let env = json!({"HOME": home, "RUST_LOG": "warn"});
    let out = std::process::Command::new(py)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_brainctl"))
        .arg(serde_json::to_string(server_args).unwrap())
        .arg(env.to_string())
        .arg(steps.to_string())
        .output()
        .expect("the MCP client runs");
    assert!(
        out.status.success(),
        "MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}
