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

/// The base URL `brainctl mcp --http` logged to `log` once it listens.
pub fn http_base(log: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            return rest.split("/mcp").next().unwrap().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server never listened: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
