//! A throwaway PostgreSQL server for tests: `initdb` in a temp dir, the
//! server on a free loopback port with trust auth and fsync off, one
//! database, stopped (SIGQUIT: immediate) when the handle drops. A
//! benchmark may add settings ([`start_with`]; a standby inherits them). Uses the
//! binaries of Debian's `postgresql` package (`localnet/install` installs
//! it) or `BRAINCTL_PG_BIN`. As root, the server runs as the `postgres`
//! user (PostgreSQL refuses root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running server.
pub struct TestPostgres {
    /// `postgres://brainctl@127.0.0.1:PORT/brainctl`.
    pub url: String,
    port: u16,
    child: std::process::Child,
    dir: PathBuf,
    /// The `-c NAME=VALUE` settings beyond the defaults.
    settings: Vec<String>,
}

/// Runs the server on `data` (in `dir`) on a free port until it answers.
fn serve(bin: &Path, dir: PathBuf, data: &Path, settings: &[String]) -> TestPostgres {
    let port = crate::free_port_block(1);
    let log = dir.join("postgres.log");
    let child = as_db_user(&bin.join("postgres"))
        .arg("-D")
        .arg(data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(&dir)
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=50",
        ])
        .args(settings.iter().flat_map(|s| ["-c", s.as_str()]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn postgres");
    let pg = TestPostgres {
        url: format!("postgres://brainctl@127.0.0.1:{port}/brainctl"),
        port,
        child,
        dir,
        settings: settings.to_vec(),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q"])
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "postgres did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    pg
}

impl TestPostgres {
    /// A hot standby of this server: `pg_basebackup` of its data with
    /// the replication settings written (`-R`), started on its own free
    /// port, following the primary by streaming replication (read-only).
    pub fn standby(&self) -> TestPostgres {
        let bin = bin_dir();
        let dir = crate::scratch_dir("brainctl-pg-standby-");
        chown_to_db_user(&dir);
        let data = dir.join("data");
        let out = as_db_user(&bin.join("pg_basebackup"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "brainctl",
            ])
            .arg("-D")
            .arg(&data)
            // a fast checkpoint: a spread one waits for the next (minutes)
            .args(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"])
            .output()
            .expect("run pg_basebackup");
        assert!(
            out.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serve(&bin, dir, &data, &self.settings)
    }
}

fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BRAINCTL_PG_BIN") {
        return PathBuf::from(d);
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.retain(|p| p.join("postgres").exists());
    versions.sort();
    versions.pop().unwrap_or_else(|| {
        panic!("no PostgreSQL server under /usr/lib/postgresql: run ./localnet/install (Debian package `postgresql`) or set BRAINCTL_PG_BIN")
    })
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// `program args…`, as the `postgres` user when we are root.
fn as_db_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "--",
        ])
        .arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn chown_to_db_user(path: &Path) {
    if !is_root() {
        return;
    }
    let status = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(path)
        .status()
        .expect("chown");
    assert!(status.success(), "chown {} to postgres", path.display());
}

/// Starts a server; panics with its log if it does not come up.
pub fn start() -> TestPostgres {
    start_with(&[])
}

/// [`start`] with `settings` (`NAME=VALUE`, each passed as `-c`).
pub fn start_with(settings: &[String]) -> TestPostgres {
    let bin = bin_dir();
    let dir = crate::scratch_dir("brainctl-pg-");
    chown_to_db_user(&dir);
    let data = dir.join("data");
    let out = as_db_user(&bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "brainctl", "--auth=trust", "--no-sync", "-E", "UTF8"])
        .output()
        .expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pg = serve(&bin, dir, &data, settings);
    let port = pg.port;
    let out = Command::new(bin.join("createdb"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "brainctl",
            "brainctl",
        ])
        .output()
        .expect("run createdb");
    assert!(
        out.status.success(),
        "createdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    pg
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
