//! The one starter for tests that run the real `skiff` binary as a process: the binary's own
//! tests (`crates/skiff/tests`), the end-to-end suites (`tests/rdkafka`) and the power-cut
//! test (`tests/powercut`).
//!
//! Owns: one child process per [`Broker`], its data directory (a `TempDir`, removed on drop,
//! unless the caller supplies the directory) and a log file that captures the broker's stdout
//! and stderr across restarts, each run headed by [`RUN_MARKER`], so a failed start or a
//! failed test can show what the broker said.
//!
//! What a start does: pick a free port on 127.0.0.1 (loopback only), pass `--set
//! listeners=PLAINTEXT://127.0.0.1:PORT --set log.dirs=DIR` plus the caller's settings, drop
//! every `SKIFF_*` variable of the test process (they are config overrides for the broker),
//! and wait, bounded, until the broker is ready ([`Ready`]). A stop is SIGTERM with a bounded
//! wait and SIGKILL when it runs out; [`Broker::kill9`] is the crash stop; [`Broker::restart`]
//! starts again on the same port and data directory; dropping a `Broker` kills it.
//!
//! Thread-safety: a `Broker` is owned by one test; methods take `&mut self`. Tests in the
//! same binary run in parallel, each with its own port and directory.
//!
//! The binary comes from [`Options::bin`], else `E2E_SKIFF_BIN`, else
//! `$CARGO_TARGET_DIR/debug/skiff`, else `<workspace>/target/debug/skiff` (see [`skiff_bin`]).

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

/// How long a start may take before the kit gives up; the broker should need well under a
/// second, the margin covers a loaded 2-core CI machine and log recovery after kill -9.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a SIGTERM'd broker may take to exit before the kit kills it and reports it as
/// hung. The broker's own drain budget (`shutdown.timeout.ms`) is 5 s by default.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The line the kit writes to the log file before each run; [`Broker::last_run_logs`] and
/// tests that look at one run split on it.
pub const RUN_MARKER: &str = "===== e2e harness: starting";

/// The line the binary logs (at INFO) once it serves requests and its signal handlers are in.
pub const READY_LINE: &str = "skiff is ready";

/// Poll interval while waiting for readiness or exit: short against the timeouts above,
/// long enough not to spin a core.
const POLL: Duration = Duration::from_millis(25);

/// How many ports a first start tries when its listener's port turns out taken.
const START_ATTEMPTS: usize = 3;

/// What the OS error says when the listener's port is taken (EADDRINUSE).
const ADDR_IN_USE: &str = "Address already in use";

/// When a start counts as done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// The listener accepts a TCP connection on 127.0.0.1:PORT.
    Accepting,
    /// This run's output contains the given text (e.g. [`READY_LINE`]); needs INFO logging.
    LogLine(String),
}

/// How to start a [`Broker`]; [`Options::new`] gives the defaults.
#[derive(Debug, Clone)]
pub struct Options {
    bin: Option<PathBuf>,
    settings: Vec<(String, String)>,
    data_dir: Option<PathBuf>,
    log_filter: Option<String>,
    ready: Ready,
    start_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// No extra settings, a temp data dir, readiness by TCP, [`START_TIMEOUT`].
    pub fn new() -> Options {
        Options {
            bin: None,
            settings: Vec::new(),
            data_dir: None,
            log_filter: None,
            ready: Ready::Accepting,
            start_timeout: START_TIMEOUT,
        }
    }

    /// The binary to run instead of [`skiff_bin`] (e.g. `env!("CARGO_BIN_EXE_skiff")`).
    pub fn bin(mut self, bin: impl Into<PathBuf>) -> Options {
        self.bin = Some(bin.into());
        self
    }

    /// One more `--set key=value`, after the listener and data dir (so it may override them).
    pub fn set(mut self, key: &str, value: &str) -> Options {
        self.settings.push((key.to_string(), value.to_string()));
        self
    }

    /// Several `--set key=value`, in order.
    pub fn sets(mut self, props: &[(&str, &str)]) -> Options {
        for (k, v) in props {
            self = self.set(k, v);
        }
        self
    }

    /// Use `dir` (kept by the caller, e.g. a test filesystem mount) as `log.dirs`.
    pub fn data_dir(mut self, dir: &Path) -> Options {
        self.data_dir = Some(dir.to_path_buf());
        self
    }

    /// Pass `--log FILTER`; without it the broker gets `RUST_LOG=info` unless the test
    /// process has `RUST_LOG` set.
    pub fn log_filter(mut self, filter: &str) -> Options {
        self.log_filter = Some(filter.to_string());
        self
    }

    /// When a start counts as done.
    pub fn ready(mut self, ready: Ready) -> Options {
        self.ready = ready;
        self
    }

    /// How long a start may take.
    pub fn start_timeout(mut self, timeout: Duration) -> Options {
        self.start_timeout = timeout;
        self
    }
}

/// A running (or stopped) skiff process with its own port and data directory.
pub struct Broker {
    bin: PathBuf,
    port: u16,
    opts: Options,
    /// Holds `data/` (the default `log.dirs`) and `broker.log` (stdout and stderr).
    root: TempDir,
    child: Option<Child>,
}

impl Broker {
    /// Starts a broker with the default settings (plus listener, data dir and `node.id=1`).
    pub fn start() -> Result<Broker> {
        Self::start_with(&[])
    }

    /// Starts a broker with `node.id=1` and extra `--set key=value` broker properties.
    pub fn start_with(props: &[(&str, &str)]) -> Result<Broker> {
        Self::start_opts(Options::new().set("node.id", "1").sets(props))
    }

    /// Starts a broker whose `log.dirs` is `data_dir` (kept by the caller), with `node.id=1`
    /// and extra broker properties. The log file still lives in a temp dir.
    pub fn start_on(data_dir: &Path, props: &[(&str, &str)]) -> Result<Broker> {
        Self::start_opts(
            Options::new()
                .data_dir(data_dir)
                .set("node.id", "1")
                .sets(props),
        )
    }

    /// Starts a broker as `opts` say and waits until it is ready.
    pub fn start_opts(opts: Options) -> Result<Broker> {
        let bin = opts.bin.clone().unwrap_or_else(skiff_bin);
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
        if opts.data_dir.is_none() {
            fs::create_dir_all(root.path().join("data")).context("creating the data dir")?;
        }
        let mut broker = Broker {
            bin,
            port: free_port()?,
            opts,
            root,
            child: None,
        };
        // A port can still be taken by another server between free_port and the broker's
        // bind; a first start may move to another one (a restart keeps its port).
        for _ in 1..START_ATTEMPTS {
            match broker.spawn() {
                Err(e) if broker.child.is_none() && e.to_string().contains(ADDR_IN_USE) => {
                    broker.port = free_port()?;
                }
                other => return other.map(|()| broker),
            }
        }
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

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The broker's `log.dirs`.
    pub fn data_dir(&self) -> PathBuf {
        match &self.opts.data_dir {
            Some(d) => d.clone(),
            None => self.root.path().join("data"),
        }
    }

    /// Everything the broker printed so far (all runs of this broker, each headed by
    /// [`RUN_MARKER`]).
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

    /// What the latest run printed, without the marker line.
    pub fn last_run_logs(&self) -> String {
        last_run(&self.logs()).to_string()
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

    /// Graceful stop: SIGTERM, then wait up to [`STOP_TIMEOUT`] for the exit status; on
    /// timeout the process is SIGKILLed and the stop is an error.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("broker is not running"))?;
        sigterm(child.id())?;
        match wait_exit(&mut child, STOP_TIMEOUT)? {
            Some(st) => Ok(st),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "broker did not exit within {STOP_TIMEOUT:?} of SIGTERM; log tail:\n{}",
                    self.log_tail(40)
                )
            }
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
        writeln!(log, "{RUN_MARKER} {} =====", self.bin.display())
            .context("writing the broker log")?;
        let run_start = log
            .seek(SeekFrom::End(0))
            .context("reading the broker log length")?;
        let log_err = log.try_clone().context("cloning the broker log handle")?;
        let mut cmd = command(&self.bin);
        cmd.arg("--set")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port))
            .arg("--set")
            .arg(format!("log.dirs={}", self.data_dir().display()));
        for (k, v) in &self.opts.settings {
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
        match &self.opts.log_filter {
            Some(filter) => {
                cmd.arg("--log").arg(filter);
            }
            None if std::env::var_os("RUST_LOG").is_none() => {
                cmd.env("RUST_LOG", "info");
            }
            None => {}
        }
        cmd.env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.child = Some(child);
        self.wait_ready(run_start)
    }

    fn wait_ready(&mut self, run_start: u64) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let timeout = self.opts.start_timeout;
        let deadline = Instant::now() + timeout;
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
            let ready = match &self.opts.ready {
                Ready::Accepting => {
                    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                }
                Ready::LogLine(line) => self.run_output_since(run_start).contains(line.as_str()),
            };
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                if let Some(mut c) = self.child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                let what = match &self.opts.ready {
                    Ready::Accepting => format!("accept TCP on {addr}"),
                    Ready::LogLine(line) => format!("log {line:?}"),
                };
                bail!(
                    "broker did not {what} within {timeout:?}; its output:\n{}",
                    self.log_tail(60)
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The log file from byte `from` on (this run's output); empty if unreadable.
    fn run_output_since(&self, from: u64) -> String {
        let mut s = Vec::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            if f.seek(SeekFrom::Start(from)).is_ok() {
                let _ = f.read_to_end(&mut s);
            }
        }
        String::from_utf8_lossy(&s).into_owned()
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

/// The part of `logs` after the last [`RUN_MARKER`] line (all of it when there is none).
pub fn last_run(logs: &str) -> &str {
    match logs.rfind(RUN_MARKER) {
        Some(at) => {
            let run = &logs[at..];
            run.split_once('\n').map_or("", |(_, rest)| rest)
        }
        None => logs,
    }
}

/// A `Command` for `bin` without the test process's `SKIFF_*` variables (config overrides
/// for the broker, which must not leak from a developer's shell into a test).
pub fn command(bin: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(bin);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SKIFF_") {
            cmd.env_remove(&name);
        }
    }
    cmd
}

/// Sends SIGTERM to `pid` (through `kill(1)`: the workspace forbids the unsafe libc call).
pub fn sigterm(pid: u32) -> Result<()> {
    let pid = pid.to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .context("running kill -TERM")?;
    if !status.success() {
        bail!("kill -TERM {pid} failed: {status}");
    }
    Ok(())
}

/// Waits up to `timeout` for `child` to exit: `Some(status)`, or `None` if it still runs.
pub fn wait_exit(child: &mut Child, timeout: Duration) -> Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = child.try_wait().context("waiting for the broker")? {
            return Ok(Some(st));
        }
        if Instant::now() > deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where the binary under test is: `E2E_SKIFF_BIN`, else `$CARGO_TARGET_DIR/debug/skiff`,
/// else `<workspace>/target/debug/skiff`. Build it first (`cargo build -p skiff`).
pub fn skiff_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("E2E_SKIFF_BIN") {
        return PathBuf::from(p);
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Path::new(&t).join("debug").join("skiff");
    }
    workspace_root().join("target").join("debug").join("skiff")
}

/// The workspace root: this crate lives at `<root>/crates/skiff-testkit`.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

/// A loopback port that was free a moment ago, never the same one twice in a process (tests
/// running in parallel do not get each other's port).
///
/// It is drawn from below the kernel's ephemeral range: a port taken from `bind(0)` and
/// released is one an outgoing connection may pick as its source port before the broker binds
/// it, which made starts fail with "Address already in use" on a busy CI machine. Ports under
/// the range are never handed out as source ports, so only a server binding that very port
/// can take it. Falls back to `bind(0)` when the range leaves no room below it.
pub fn free_port() -> Result<u16> {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let (lo, hi) = ports_below_ephemeral_range();
    let mut seen = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    if hi > lo {
        let span = u64::from(hi - lo);
        let mut pick = random_u64();
        for _ in 0..span.min(2_000) {
            // Knuth's MMIX linear congruential step; its high bits pick the port.
            pick = pick
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let port = lo + ((pick >> 33) % span) as u16;
            if !seen.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                seen.push(port);
                return Ok(port);
            }
        }
    }
    for _ in 0..100 {
        let l =
            TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
        let port = l.local_addr().context("reading the bound address")?.port();
        drop(l);
        if !seen.contains(&port) {
            seen.push(port);
            return Ok(port);
        }
    }
    bail!("the kernel kept handing out ports this process already used")
}

/// Lowest port tests draw from: above the well-known and most registered service ports.
const TEST_PORTS_FROM: u16 = 20_000;

/// `[TEST_PORTS_FROM, first ephemeral port)`; empty when the ephemeral range starts lower.
fn ports_below_ephemeral_range() -> (u16, u16) {
    let first_ephemeral = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    (TEST_PORTS_FROM, first_ephemeral)
}

/// A seed that differs between processes and calls (std's per-process random hash keys).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests;
