//! Headless Chromium for tests of the web explorer: load a page, return
//! the DOM after it rendered, save a screenshot. Each call runs its own
//! browser process with a throwaway profile (no sandbox: tests run as
//! root in CI), no network beyond the page asked for.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A Chromium binary.
pub struct Chromium {
    bin: PathBuf,
}

impl Chromium {
    /// The installed Chromium ([`crate::chromium`]; missing fails the test).
    pub fn find() -> Chromium {
        Chromium {
            bin: crate::chromium(),
        }
    }

    fn run(&self, extra: &[String], url: &str) -> std::process::Output {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--mute-audio",
            "--hide-scrollbars",
            "--timeout=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url);
        let child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("chromium starts");
        // a hung browser must fail the test, not stall it
        let pid = child.id();
        let watchdog = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(60));
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        });
        let out = child.wait_with_output().expect("chromium output");
        drop(watchdog);
        out
    }

    /// The DOM of `url` once loaded (`--dump-dom`).
    pub fn dom(&self, url: &str) -> String {
        let out = self.run(&["--dump-dom".into()], url);
        let dom = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            dom.contains("<html"),
            "chromium returned no DOM for {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dom
    }

    /// Saves a `width`×`height` PNG screenshot of `url` to `to`.
    pub fn screenshot(&self, url: &str, to: &Path, width: u32, height: u32) {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        let out = self.run(
            &[
                format!("--screenshot={}", to.display()),
                format!("--window-size={width},{height}"),
            ],
            url,
        );
        let png = std::fs::read(to).unwrap_or_default();
        assert!(
            png.starts_with(b"\x89PNG"),
            "no screenshot of {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Where tests leave artifacts (screenshots): `$BRAINCTL_ARTIFACTS`, or
/// `target/test-artifacts` of the workspace.
pub fn artifacts_dir() -> PathBuf {
    std::env::var_os("BRAINCTL_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts"))
}
