//! Broker process control for the benchmark: Skiff, and the peers Apache Kafka and Tansu.
//!
//! Owns: one broker process per [`RunningBroker`], its temporary root directory (data dir and
//! the file that captures the broker's output, so a failed start can show why), the time from
//! spawn to the first served request, and stopping it (graceful, or `kill -9` for the
//! unclean-restart figure). [`BrokerKind`] is the seam for peers: each variant has its own
//! command line; readiness is the same for all (an ApiVersions round trip, see `probe`).
//!
//! - Skiff: the release binary, `--set listeners=...`, `--set log.dirs=<root>/data`.
//! - Kafka: the repo's `tests/kafka/start.sh PORT <root>/data [k=v..]` (KRaft, single node,
//!   loopback; installs Kafka 4.4.0 from Maven Central into a cache on first use); the JVM's
//!   pid comes from `<root>/data/kafka.pid`, log segments are under `<root>/data/logs`.
//! - With [`Launch::ssl_keystore`], Skiff and Kafka get a second client listener, `SSL`, on
//!   its own free port next to the PLAINTEXT one, with the same PEM keystore (key + chain)
//!   and server-only authentication; readiness is still probed on the PLAINTEXT port.
//! - Tansu: `tansu broker ... --storage-engine memory://tansu/`: in memory, nothing persists.
//!
//! The free port, the `SKIFF_*`-free command and the bounded wait after SIGTERM come from
//! `skiff-testkit`, the tests' starter; readiness and timing stay here (they differ per peer).
//!
//! Thread-safety: a `RunningBroker` is owned by the bench's main thread; `sample()` only
//! reads `/proc/PID/*`. On-disk: everything lives under the temp root, removed on drop.

use std::fs::{self, File};
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use skiff_testkit::{free_port, wait_exit};
use tempfile::TempDir;

use crate::probe;
use crate::procfs::{self, ProcSample};

/// How long a broker may take to serve its first request. Skiff starts in milliseconds,
/// Kafka's JVM in seconds; the margin is for a loaded 2-core machine and log recovery.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a SIGTERM'd broker may take to exit before it is SIGKILLed and reported.
const STOP_TIMEOUT: Duration = Duration::from_secs(40);

/// How to install Tansu when its binary is missing (TOOLING.md section 5).
pub const TANSU_INSTALL: &str =
    "cargo install tansu --version 0.6.0 --locked --features dynostore   (about 15 min; \
     installs $HOME/.cargo/bin/tansu, found on the PATH, or pass --tansu-bin)";

/// The broker under test. A peer is a variant, not a code path elsewhere.
#[derive(Debug, Clone)]
pub enum BrokerKind {
    /// The Skiff release binary at this path.
    Skiff { bin: PathBuf },
    /// Apache Kafka through the repo's scripts in this directory (`tests/kafka`).
    Kafka { scripts: PathBuf },
    /// The Tansu binary at this path (memory storage).
    Tansu { bin: PathBuf },
}

/// Skiff at `skiff`, then Kafka when given: the contenders of a "Skiff beside Kafka" mode,
/// labelled as its matrix columns.
pub fn skiff_and_kafka(skiff: &Path, kafka: Option<BrokerKind>) -> Vec<(&'static str, BrokerKind)> {
    let mut contenders = vec![(
        "skiff",
        BrokerKind::Skiff {
            bin: skiff.to_path_buf(),
        },
    )];
    if let Some(k) = kafka {
        contenders.push(("kafka", k));
    }
    contenders
}

/// The broker's process: our child, or (Kafka) a JVM that `start.sh` detached.
enum Proc {
    Child(Child),
    Detached(u32),
}

impl BrokerKind {
    /// Short name for the report.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerKind::Skiff { .. } => "skiff",
            BrokerKind::Kafka { .. } => "kafka",
            BrokerKind::Tansu { .. } => "tansu",
        }
    }

    /// Whether data survives a restart (Tansu's memory storage does not).
    pub fn persists(&self) -> bool {
        !matches!(self, BrokerKind::Tansu { .. })
    }

    /// Checks that the broker can be started at all, before any run; for Kafka this runs
    /// `install.sh` (a no-op when the cache is complete).
    pub fn check(&self) -> Result<()> {
        match self {
            BrokerKind::Skiff { bin } => {
                if !bin.is_file() {
                    bail!(
                        "skiff binary not found at {} (build it with `cargo build --release -p skiff` \
                         or pass --broker-bin PATH); the bench never builds it itself",
                        bin.display()
                    );
                }
            }
            BrokerKind::Kafka { scripts } => {
                let install = scripts.join("install.sh");
                if !install.is_file() || !scripts.join("start.sh").is_file() {
                    bail!(
                        "Kafka scripts not found in {} (pass --kafka-scripts DIR holding \
                         install.sh, start.sh and stop.sh)",
                        scripts.display()
                    );
                }
                let out = Command::new("bash")
                    .arg(&install)
                    .stdin(Stdio::null())
                    .output()
                    .context("running tests/kafka/install.sh")?;
                if !out.status.success() {
                    bail!(
                        "{} failed (it needs java 17+ and mvn): {}",
                        install.display(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
            }
            BrokerKind::Tansu { bin } => {
                if !bin.is_file() {
                    bail!(
                        "tansu binary not found at {}; install it with {TANSU_INSTALL}",
                        bin.display()
                    );
                }
            }
        }
        Ok(())
    }

    /// Starts a fresh broker with its defaults (see [`Self::launch_with`]).
    pub fn launch(&self) -> Result<RunningBroker> {
        self.launch_with(&Launch::default())
    }

    /// Starts a fresh broker on a free loopback port with an empty temp root, the extra
    /// settings in `opts`, and waits until it serves an ApiVersions request.
    pub fn launch_with(&self, opts: &Launch) -> Result<RunningBroker> {
        let root = tempfile::Builder::new()
            .prefix("skiff-bench-")
            .tempdir()
            .context("creating the temp dir for the broker")?;
        fs::create_dir_all(root.path().join("data")).context("creating the broker data dir")?;
        self.launch_in(root, opts)
    }

    /// Checks the broker can run, starts a fresh one with default settings, runs `measure`
    /// on it and stops it. The measurement's error comes first; a failed stop fails too.
    pub fn with_fresh<T>(&self, measure: impl FnOnce(&RunningBroker) -> Result<T>) -> Result<T> {
        self.check()?;
        let mut b = self.launch_with(&Launch::default())?;
        let result = measure(&b);
        let stopped = b.stop();
        let value = result?;
        stopped?;
        Ok(value)
    }

    /// Starts the broker on the data already under `root` (a restart), on a new free port.
    pub fn launch_in(&self, root: TempDir, opts: &Launch) -> Result<RunningBroker> {
        let root_path = root.path().to_path_buf();
        let data = root_path.join("data");
        let port = free_port()?;
        let ssl_port = match &opts.ssl_keystore {
            Some(_) if matches!(self, BrokerKind::Tansu { .. }) => {
                bail!("the bench runs Tansu without TLS")
            }
            Some(_) => Some(free_port()?),
            None => None,
        };
        let log_path = root_path.join("broker.log");
        let log =
            File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let log_err = log.try_clone().context("cloning the broker log handle")?;
        let mut cmd = match self {
            BrokerKind::Skiff { bin } => skiff_command(bin, port, ssl_port, &data, opts),
            BrokerKind::Kafka { scripts } => {
                let mut cmd = Command::new("bash");
                cmd.arg(scripts.join("start.sh"))
                    .arg(port.to_string())
                    .arg(&data);
                if let (Some(ssl), Some(keystore)) = (ssl_port, &opts.ssl_keystore) {
                    // start.sh adds the listener (it alone knows the controller's port).
                    cmd.env("KAFKA_EXTRA_LISTENERS", format!("SSL://127.0.0.1:{ssl}"));
                    cmd.args(ssl_settings(keystore));
                }
                cmd.args(&opts.settings);
                cmd
            }
            BrokerKind::Tansu { bin } => {
                let url = format!("tcp://127.0.0.1:{port}");
                let mut cmd = Command::new(bin);
                cmd.arg("broker")
                    .arg("--listener-url")
                    .arg(&url)
                    .arg("--advertised-listener-url")
                    .arg(&url)
                    .arg("--storage-engine")
                    .arg("memory://tansu/")
                    .arg("--silent");
                cmd
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let spawned = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", self.name()))?;
        let mut broker = RunningBroker {
            kind: self.clone(),
            port,
            ssl_port,
            root_path,
            root: Some(root),
            proc: Some(Proc::Child(child)),
            started_in: Duration::ZERO,
        };
        let served = broker.wait_served()?;
        broker.started_in = served.duration_since(spawned);
        if let BrokerKind::Kafka { .. } = self {
            broker.adopt_kafka_jvm()?;
        }
        Ok(broker)
    }
}

/// The broker properties of the SSL listener, the same for Skiff and Kafka: a PEM keystore
/// file holding the unencrypted PKCS#8 key and the chain (`ssl.key.password` unset, which is
/// what Kafka's PEM loader needs for an unencrypted key), no client authentication, every
/// other `ssl.*` setting at its default (TLSv1.2 and TLSv1.3 enabled, 1.3 negotiated).
fn ssl_settings(keystore: &Path) -> [String; 2] {
    [
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
    ]
}

fn skiff_command(
    bin: &Path,
    port: u16,
    ssl_port: Option<u16>,
    data: &Path,
    opts: &Launch,
) -> Command {
    // The kit's command drops SKIFF_* variables (config overrides for the broker): never let
    // the bench's own environment change what is being measured.
    let mut cmd = skiff_testkit::command(bin);
    let mut listeners = format!("listeners=PLAINTEXT://127.0.0.1:{port}");
    if let Some(ssl) = ssl_port {
        listeners.push_str(&format!(",SSL://127.0.0.1:{ssl}"));
    }
    cmd.arg("--set")
        .arg(listeners)
        .arg("--set")
        .arg(format!("log.dirs={}", data.display()));
    if let Some(keystore) = &opts.ssl_keystore {
        for kv in ssl_settings(keystore) {
            cmd.arg("--set").arg(kv);
        }
    }
    for kv in &opts.settings {
        cmd.arg("--set").arg(kv);
    }
    // The binary reads its filter from `--log` (default `info`), not RUST_LOG; `warn` keeps
    // per-request logging off the measured path.
    let filter = if opts.log_filter.is_empty() {
        "warn"
    } else {
        opts.log_filter.as_str()
    };
    cmd.arg("--log").arg(filter);
    cmd
}

/// Extra start-up options for [`BrokerKind::launch_with`].
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Broker properties as `key=value` (Skiff: `--set`; Kafka: server.properties lines;
    /// Tansu: not supported, must be empty).
    pub settings: Vec<String>,
    /// Skiff's log filter in RUST_LOG syntax; empty means `warn`.
    pub log_filter: String,
    /// Adds an `SSL` listener with this PEM keystore (key + chain; Skiff and Kafka only).
    pub ssl_keystore: Option<PathBuf>,
}

/// A broker process started by [`BrokerKind::launch`]. Dropping it kills the process (if it
/// was not stopped) and removes the temp root.
pub struct RunningBroker {
    kind: BrokerKind,
    port: u16,
    /// The SSL listener's port, when [`Launch::ssl_keystore`] asked for one.
    ssl_port: Option<u16>,
    root_path: PathBuf,
    /// Owns the temp root; taken by [`Self::stop_keep`] / [`Self::kill9_keep`] for restarts.
    root: Option<TempDir>,
    proc: Option<Proc>,
    /// Spawn to the first served ApiVersions request.
    started_in: Duration,
}

impl RunningBroker {
    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT` of the SSL listener, if the broker has one.
    pub fn ssl_bootstrap(&self) -> Option<String> {
        self.ssl_port.map(|p| format!("127.0.0.1:{p}"))
    }

    /// Which broker this is.
    pub fn kind(&self) -> &BrokerKind {
        &self.kind
    }

    /// Spawn to the first served request (for Kafka: from running `start.sh`).
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The broker's log dir (partition directories are `<topic>-<partition>` inside).
    pub fn data_dir(&self) -> PathBuf {
        match self.kind {
            BrokerKind::Kafka { .. } => self.root_path.join("data").join("logs"),
            _ => self.root_path.join("data"),
        }
    }

    /// The file holding the broker's output (Kafka: its log4j console output, which includes
    /// the log cleaner's summaries).
    pub fn log_path(&self) -> PathBuf {
        match self.kind {
            BrokerKind::Kafka { .. } => self.root_path.join("data").join("kafka.out"),
            _ => self.root_path.join("broker.log"),
        }
    }

    fn pid(&self) -> Result<u32> {
        match self.proc.as_ref() {
            Some(Proc::Child(c)) => Ok(c.id()),
            Some(Proc::Detached(pid)) => Ok(*pid),
            None => bail!("broker is not running"),
        }
    }

    /// CPU seconds used so far by the broker's threads named `prefix*`.
    pub fn threads_cpu_secs(&self, prefix: &str, clk_tck: f64) -> Result<f64> {
        procfs::threads_cpu_secs(self.pid()?, prefix, clk_tck)
    }

    /// How many files (sockets included) the broker process has open, from `/proc/PID/fd`.
    pub fn open_files(&self) -> Result<usize> {
        let dir = format!("/proc/{}/fd", self.pid()?);
        Ok(std::fs::read_dir(&dir)
            .with_context(|| format!("reading {dir}"))?
            .count())
    }

    /// The broker's CPU time, peak and current RSS (whole process) from `/proc`.
    pub fn sample(&self, clk_tck: f64) -> Result<ProcSample> {
        procfs::sample(self.pid()?, clk_tck)
    }

    /// Graceful stop (SIGTERM, or `stop.sh` for Kafka), then the temp root is removed.
    pub fn stop(&mut self) -> Result<()> {
        self.stop_process()
    }

    /// Graceful stop, keeping the data for a restart with [`BrokerKind::launch_in`].
    pub fn stop_keep(mut self) -> Result<TempDir> {
        self.stop_process()?;
        self.root
            .take()
            .ok_or_else(|| anyhow!("temp root already taken"))
    }

    /// `kill -9`, keeping the data for an unclean restart with [`BrokerKind::launch_in`].
    pub fn kill9_keep(mut self) -> Result<TempDir> {
        match self.proc.take() {
            Some(Proc::Child(mut c)) => {
                c.kill().context("kill -9 of the broker")?;
                c.wait().context("reaping the broker")?;
            }
            Some(Proc::Detached(pid)) => {
                signal(pid, "-KILL")?;
                wait_gone(pid, STOP_TIMEOUT)?;
                let _ = fs::remove_file(self.root_path.join("data").join("kafka.pid"));
            }
            None => bail!("broker is not running"),
        }
        self.root
            .take()
            .ok_or_else(|| anyhow!("temp root already taken"))
    }

    fn stop_process(&mut self) -> Result<()> {
        match self.proc.take() {
            None => bail!("broker is not running"),
            Some(Proc::Detached(pid)) => {
                let BrokerKind::Kafka { scripts } = &self.kind else {
                    bail!("only Kafka runs detached");
                };
                let st = Command::new("bash")
                    .arg(scripts.join("stop.sh"))
                    .arg(self.root_path.join("data"))
                    .stdin(Stdio::null())
                    .status()
                    .context("running tests/kafka/stop.sh")?;
                if !st.success() {
                    bail!("tests/kafka/stop.sh failed: {st}");
                }
                wait_gone(pid, STOP_TIMEOUT)
            }
            Some(Proc::Child(mut child)) => {
                skiff_testkit::sigterm(child.id())?;
                match wait_exit(&mut child, STOP_TIMEOUT)? {
                    Some(st) => {
                        if !st.success() {
                            eprintln!(
                                "warning: {} exited with {st} after SIGTERM; log tail:\n{}",
                                self.kind.name(),
                                self.log_tail(20)
                            );
                        }
                        Ok(())
                    }
                    None => {
                        let _ = child.kill();
                        let _ = child.wait();
                        bail!(
                            "{} did not exit within {STOP_TIMEOUT:?} of SIGTERM; log tail:\n{}",
                            self.kind.name(),
                            self.log_tail(40)
                        );
                    }
                }
            }
        }
    }

    /// Last `n` lines the broker printed, for error messages (Kafka: start script and JVM).
    pub fn log_tail(&self, n: usize) -> String {
        let mut out = tail_of(&self.root_path.join("broker.log"), n);
        if let BrokerKind::Kafka { .. } = self.kind {
            out.push_str("\n--- kafka.out ---\n");
            out.push_str(&tail_of(&self.log_path(), n));
        }
        out
    }

    fn wait_served(&mut self) -> Result<Instant> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_TIMEOUT;
        let name = self.kind.name();
        let root = self.root_path.clone();
        let proc = &mut self.proc;
        let is_kafka = matches!(self.kind, BrokerKind::Kafka { .. });
        let result = probe::wait_served(addr, deadline, || {
            if let Some(Proc::Child(child)) = proc.as_mut() {
                if let Some(st) = child.try_wait().context("polling the broker process")? {
                    // start.sh exits 0 once Kafka is up; only a failure is fatal.
                    if !(is_kafka && st.success()) {
                        bail!("{name} exited during start ({st})");
                    }
                }
            }
            Ok(())
        });
        match result {
            Ok(at) => Ok(at),
            Err(e) => {
                if let Some(Proc::Child(mut c)) = self.proc.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                if is_kafka {
                    // The JVM may be up even though the probe failed: stop it by its pid.
                    if let Ok(pid) = read_pid(&root.join("data").join("kafka.pid")) {
                        let _ = signal(pid, "-KILL");
                    }
                }
                bail!("{e:#}; its output:\n{}", self.log_tail(40))
            }
        }
    }

    /// Kafka: waits (bounded) for `start.sh` to exit and takes over the JVM by its pid file.
    fn adopt_kafka_jvm(&mut self) -> Result<()> {
        let Some(Proc::Child(mut script)) = self.proc.take() else {
            bail!("start.sh is not running");
        };
        let deadline = Instant::now() + START_TIMEOUT;
        let st = loop {
            if let Some(st) = script.try_wait().context("waiting for start.sh")? {
                break st;
            }
            if Instant::now() > deadline {
                let _ = script.kill();
                let _ = script.wait();
                bail!("start.sh did not finish within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let pid = read_pid(&self.root_path.join("data").join("kafka.pid"));
        if let Ok(pid) = pid {
            self.proc = Some(Proc::Detached(pid));
        }
        if !st.success() {
            bail!("start.sh failed ({st}):\n{}", self.log_tail(40));
        }
        pid.map(|_| ())
    }
}

impl Drop for RunningBroker {
    fn drop(&mut self) {
        match self.proc.take() {
            Some(Proc::Child(mut c)) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            Some(Proc::Detached(pid)) => {
                let _ = signal(pid, "-KILL");
                let _ = wait_gone(pid, Duration::from_secs(10));
            }
            None => {}
        }
    }
}

fn read_pid(path: &Path) -> Result<u32> {
    let s = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    s.trim()
        .parse()
        .with_context(|| format!("{} does not hold a pid: {s:?}", path.display()))
}

/// `kill SIG PID` (the workspace forbids the unsafe libc call).
fn signal(pid: u32, sig: &str) -> Result<()> {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .with_context(|| format!("running kill {sig} {pid}"))?;
    if !st.success() {
        bail!("kill {sig} {pid} failed: {st}");
    }
    Ok(())
}

/// Waits until process `pid` is gone (or a zombie nobody of ours will reap).
fn wait_gone(pid: u32, timeout: Duration) -> Result<()> {
    let stat = PathBuf::from(format!("/proc/{pid}/stat"));
    let deadline = Instant::now() + timeout;
    loop {
        match fs::read_to_string(&stat) {
            Err(_) => return Ok(()),
            Ok(s)
                if s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z')) =>
            {
                return Ok(())
            }
            Ok(_) => {}
        }
        if Instant::now() > deadline {
            bail!("process {pid} still alive after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail_of(path: &Path, n: usize) -> String {
    let mut s = String::new();
    match File::open(path) {
        Ok(mut f) => {
            if let Err(e) = f.read_to_string(&mut s) {
                return format!("<cannot read {}: {e}>", path.display());
            }
        }
        Err(e) => return format!("<cannot open {}: {e}>", path.display()),
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn missing_binary_is_reported_with_a_hint() {
        let kind = BrokerKind::Skiff {
            bin: PathBuf::from("/nonexistent/skiff"),
        };
        let err = kind.check().unwrap_err().to_string();
        assert!(err.contains("--broker-bin"), "{err}");
    }
}
