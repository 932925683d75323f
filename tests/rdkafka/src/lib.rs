//! Process harness for the end-to-end suites: starts the real `skiff` binary on a free
//! loopback port with a temporary data directory, and stops, kills or restarts it.
//!
//! Owns: one child process per [`Broker`], its data directory (a `TempDir`, removed on drop)
//! and a log file that captures the broker's stdout and stderr across restarts, so a failed
//! start or a failed test can show what the broker said.
//!
//! Thread-safety: a `Broker` is owned by one test; methods take `&mut self`. Tests in the same
//! binary run in parallel, each with its own port and directory.
//!
//! The binary comes from `E2E_SKIFF_BIN`, else `$CARGO_TARGET_DIR/debug/skiff`, else
//! `<workspace>/target/debug/skiff`; build it first (`cargo build -p skiff`). Environment
//! variables named `SKIFF_*` are config overrides for the broker, so none of the test
//! process's `SKIFF_*` variables are passed on to it.

pub mod raw;

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

/// How long a start may take before the harness gives up; the broker should need well under
/// a second, the margin covers a loaded 2-core CI machine and log recovery after kill -9.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a SIGTERM'd broker may take to exit before the harness reports it as hung.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running (or stopped) skiff process with its own port and data directory.
pub struct Broker {
    bin: PathBuf,
    port: u16,
    /// Holds `data/` (the broker's `log.dirs`) and `broker.log` (its stdout/stderr).
    root: TempDir,
    extra: Vec<(String, String)>,
    /// The broker's `log.dirs` when the caller chose it ([`Broker::start_on`]); else `root/data`.
    data: Option<PathBuf>,
    child: Option<Child>,
}

impl Broker {
    /// Starts a broker with the default settings (plus listener, data dir and node id).
    pub fn start() -> Result<Broker> {
        Self::start_with(&[])
    }

    /// Starts a broker with extra `--set key=value` broker properties.
    pub fn start_with(props: &[(&str, &str)]) -> Result<Broker> {
        Self::start_inner(None, props)
    }

    /// Starts a broker whose `log.dirs` is `data_dir` (kept by the caller, e.g. a test
    /// filesystem mount), with extra broker properties. The log file still lives in a temp dir.
    pub fn start_on(data_dir: &Path, props: &[(&str, &str)]) -> Result<Broker> {
        Self::start_inner(Some(data_dir.to_path_buf()), props)
    }

    fn start_inner(data: Option<PathBuf>, props: &[(&str, &str)]) -> Result<Broker> {
        let bin = skiff_bin();
        if !bin.is_file() {
            bail!(
                "skiff binary not found at {} (build it with `cargo build -p skiff` or set E2E_SKIFF_BIN)",
                bin.display()
            );
        }
        let root = tempfile::Builder::new()
            .prefix("skiff-e2e-")
            .tempdir()
            .context("creating the temp dir for the broker")?;
        fs::create_dir_all(root.path().join("data")).context("creating the data dir")?;
        let port = free_port()?;
        let mut broker = Broker {
            bin,
            port,
            root,
            extra: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            data,
            child: None,
        };
        broker.spawn()?;
        Ok(broker)
    }

    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's `log.dirs`.
    pub fn data_dir(&self) -> PathBuf {
        if let Some(d) = &self.data {
            return d.clone();
        }
        self.root.path().join("data")
    }

    /// Everything the broker printed so far (all runs of this broker, separated by markers).
    pub fn logs(&self) -> String {
        let mut s = String::new();
        match File::open(self.log_path()) {
            Ok(mut f) => {
                if let Err(e) = f.read_to_string(&mut s) {
                    s = format!("<cannot read broker log: {e}>");
                }
            }
            Err(e) => s = format!("<cannot open broker log: {e}>"),
        }
        s
    }

    /// Last `n` lines of [`Broker::logs`], for error messages.
    pub fn log_tail(&self, n: usize) -> String {
        let logs = self.logs();
        let lines: Vec<&str> = logs.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Whether the child process is still alive.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Graceful stop: SIGTERM, then wait up to [`STOP_TIMEOUT`] for the exit status.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("broker is not running"))?;
        let pid = child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            bail!("kill -TERM {pid} failed: {status}");
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(st) = child.try_wait().context("waiting for the broker")? {
                return Ok(st);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "broker did not exit within {:?} of SIGTERM; log tail:\n{}",
                    STOP_TIMEOUT,
                    self.log_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Crash stop: SIGKILL, no chance to flush or write a clean-shutdown marker.
    pub fn kill9(&mut self) -> Result<()> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("broker is not running"))?;
        child.kill().context("sending SIGKILL to the broker")?;
        child.wait().context("reaping the killed broker")?;
        Ok(())
    }

    /// Starts the binary again on the same port and data directory. Stops it first (SIGTERM)
    /// if it is still running.
    pub fn restart(&mut self) -> Result<()> {
        if self.child.is_some() {
            self.stop()?;
        }
        self.spawn()
    }

    fn log_path(&self) -> PathBuf {
        self.root.path().join("broker.log")
    }

    fn spawn(&mut self) -> Result<()> {
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        {
            use std::io::Write;
            writeln!(
                log,
                "===== e2e harness: starting {} =====",
                self.bin.display()
            )
            .context("writing the broker log")?;
        }
        let log_err = log.try_clone().context("cloning the broker log handle")?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--set")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port))
            .arg("--set")
            .arg(format!("log.dirs={}", self.data_dir().display()))
            .arg("--set")
            .arg("node.id=1");
        for (k, v) in &self.extra {
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SKIFF_") {
                cmd.env_remove(&name);
            }
        }
        cmd.env("NO_COLOR", "1");
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "info");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(st) = child.try_wait().context("polling the broker process")? {
                    self.child = None;
                    bail!(
                        "broker exited during start ({st}); its output:\n{}",
                        self.log_tail(60)
                    );
                }
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                if let Some(mut c) = self.child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                bail!(
                    "broker did not accept TCP on {addr} within {:?}; its output:\n{}",
                    START_TIMEOUT,
                    self.log_tail(60)
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "----- skiff broker output ({}) -----\n{}\n-----",
                self.bootstrap(),
                self.log_tail(80)
            );
        }
    }
}

/// Where the binary under test is.
pub fn skiff_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("E2E_SKIFF_BIN") {
        return PathBuf::from(p);
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Path::new(&t).join("debug").join("skiff");
    }
    workspace_root().join("target").join("debug").join("skiff")
}

/// The workspace root: this crate lives at `<root>/tests/rdkafka`.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

/// A loopback port that was free a moment ago: bind port 0, read it, release it.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
    let port = l.local_addr().context("reading the bound address")?.port();
    drop(l);
    Ok(port)
}

/// A topic name unique to this process and call, so tests never collide.
pub fn unique_topic(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn free_port_is_bindable() {
        let p = free_port().unwrap();
        assert_ne!(p, 0);
        TcpListener::bind(("127.0.0.1", p)).unwrap();
    }

    #[test]
    fn unique_topics_differ() {
        assert_ne!(unique_topic("t"), unique_topic("t"));
    }

    #[test]
    fn missing_binary_is_a_clear_error() {
        // Only meaningful when E2E_SKIFF_BIN is not pointing at a real file.
        if skiff_bin().is_file() {
            return;
        }
        let err = Broker::start().err().unwrap().to_string();
        assert!(err.contains("cargo build -p skiff"), "{err}");
    }
}
