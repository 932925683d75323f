//! Broker process control and `/proc` sampling for the benchmark.
//!
//! Owns: one broker child process per [`RunningBroker`], its fresh temporary data directory
//! and the file that captures the broker's stdout/stderr (so a failed start can show why).
//! [`BrokerKind`] is the seam for peers: Skiff today; Apache Kafka and Tansu become further
//! variants with their own command line, readiness check and topic setup.
//!
//! Thread-safety: a `RunningBroker` is owned by the bench's main thread; `sample()` only
//! reads `/proc/PID/*` and may be called at any time while the child lives.
//!
//! On-disk: writes nothing itself except `broker.log` in the temp root; the broker writes its
//! log segments under `<temp root>/data`. Everything is removed when the value is dropped.

use std::fs::{self, File};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

/// How long a broker may take to accept TCP. Skiff starts in milliseconds; the margin is for
/// a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a SIGTERM'd broker may take to exit before it is SIGKILLed and reported.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// The broker under test. A peer is added as a new variant, not as a new code path elsewhere.
#[derive(Debug, Clone)]
pub enum BrokerKind {
    /// The Skiff release binary at this path.
    Skiff { bin: PathBuf },
}

impl BrokerKind {
    /// Short name for the report.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerKind::Skiff { .. } => "skiff",
        }
    }

    /// Checks that the broker can be started at all (the binary exists), before any run.
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
                Ok(())
            }
        }
    }

    /// Starts a fresh broker with its defaults and `warn` logging (see [`Self::launch_with`]).
    pub fn launch(&self) -> Result<RunningBroker> {
        self.launch_with(&Launch::default())
    }

    /// Starts a fresh broker on a free loopback port with an empty temp data dir, the extra
    /// broker settings and log filter in `opts`, and waits until it accepts TCP connections.
    pub fn launch_with(&self, opts: &Launch) -> Result<RunningBroker> {
        let root = tempfile::Builder::new()
            .prefix("skiff-bench-")
            .tempdir()
            .context("creating the temp dir for the broker")?;
        let data = root.path().join("data");
        fs::create_dir_all(&data).context("creating the broker data dir")?;
        let port = free_port()?;
        let log_path = root.path().join("broker.log");
        let log =
            File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let log_err = log.try_clone().context("cloning the broker log handle")?;
        let mut cmd = match self {
            BrokerKind::Skiff { bin } => {
                let mut cmd = Command::new(bin);
                cmd.arg("--set")
                    .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
                    .arg("--set")
                    .arg(format!("log.dirs={}", data.display()));
                for kv in &opts.settings {
                    cmd.arg("--set").arg(kv);
                }
                // SKIFF_* variables are config overrides for the broker: never let the
                // bench's own environment change what is being measured.
                for (name, _) in std::env::vars_os() {
                    if name.to_string_lossy().starts_with("SKIFF_") {
                        cmd.env_remove(&name);
                    }
                }
                // The binary reads its filter from `--log` (default `info`), not RUST_LOG;
                // `warn` keeps per-request logging off the measured path.
                let filter = if opts.log_filter.is_empty() {
                    "warn"
                } else {
                    opts.log_filter.as_str()
                };
                cmd.arg("--log").arg(filter);
                cmd
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd.spawn().context("spawning the broker")?;
        let mut broker = RunningBroker {
            kind: self.clone(),
            port,
            root,
            child: Some(child),
        };
        broker.wait_ready()?;
        Ok(broker)
    }
}

/// Extra start-up options for [`BrokerKind::launch_with`].
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Broker properties as `key=value`, passed as `--set key=value`.
    pub settings: Vec<String>,
    /// Log filter in RUST_LOG syntax; empty means `warn`.
    pub log_filter: String,
}

/// A broker process started by [`BrokerKind::launch`]. Dropping it kills the process (if
/// [`RunningBroker::stop`] was not called) and removes the data directory.
pub struct RunningBroker {
    kind: BrokerKind,
    port: u16,
    /// Holds `data/` (the broker's `log.dirs`) and `broker.log`; removed on drop.
    root: TempDir,
    child: Option<Child>,
}

/// Cumulative resource use of the broker process at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcSample {
    /// user + system CPU seconds since the process started.
    pub cpu_secs: f64,
    /// Peak resident set size so far (VmHWM), in bytes.
    pub peak_rss_bytes: u64,
}

impl RunningBroker {
    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The broker's `log.dirs` (partition directories are `<topic>-<partition>` inside).
    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The file holding the broker's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.root.path().join("broker.log")
    }

    fn pid(&self) -> Result<u32> {
        Ok(self
            .child
            .as_ref()
            .ok_or_else(|| anyhow!("broker is not running"))?
            .id())
    }

    /// CPU seconds (user + system) used so far by the broker's threads whose name starts
    /// with `prefix` (e.g. `skiff-cleaner`), from `/proc/PID/task/*/stat`. Threads that
    /// exited are not counted.
    pub fn threads_cpu_secs(&self, prefix: &str, clk_tck: f64) -> Result<f64> {
        let pid = self.pid()?;
        let tasks = Path::new("/proc").join(pid.to_string()).join("task");
        let mut ticks = 0u64;
        for entry in fs::read_dir(&tasks).with_context(|| format!("listing {}", tasks.display()))? {
            let Ok(entry) = entry else { continue };
            // A thread may exit between the listing and the read: skip it.
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if thread_name(&stat).is_some_and(|n| n.starts_with(prefix)) {
                ticks += parse_cpu_ticks(&stat).unwrap_or(0);
            }
        }
        Ok(ticks as f64 / clk_tck)
    }

    /// Reads the broker's CPU time and peak RSS from `/proc/PID/{stat,status}`.
    pub fn sample(&self, clk_tck: f64) -> Result<ProcSample> {
        let pid = self.pid()?;
        let proc_dir = Path::new("/proc").join(pid.to_string());
        let stat = fs::read_to_string(proc_dir.join("stat"))
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        let status = fs::read_to_string(proc_dir.join("status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        let ticks = parse_cpu_ticks(&stat)
            .ok_or_else(|| anyhow!("cannot parse utime/stime from /proc/{pid}/stat: {stat}"))?;
        let hwm =
            parse_vm_hwm(&status).ok_or_else(|| anyhow!("no VmHWM line in /proc/{pid}/status"))?;
        Ok(ProcSample {
            cpu_secs: ticks as f64 / clk_tck,
            peak_rss_bytes: hwm,
        })
    }

    /// Graceful stop: SIGTERM, then wait (bounded) for the exit. A broker that does not exit
    /// is SIGKILLed and reported as an error, with its log tail.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            bail!("broker is not running");
        };
        let pid = child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            let _ = child.kill();
            let _ = child.wait();
            bail!("kill -TERM {pid} failed: {status}");
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(st) = child.try_wait().context("waiting for the broker")? {
                if !st.success() {
                    eprintln!(
                        "warning: {} exited with {st} after SIGTERM; log tail:\n{}",
                        self.kind.name(),
                        self.log_tail(20)
                    );
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{} did not exit within {STOP_TIMEOUT:?} of SIGTERM; log tail:\n{}",
                    self.kind.name(),
                    self.log_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Last `n` lines the broker printed, for error messages.
    pub fn log_tail(&self, n: usize) -> String {
        let mut s = String::new();
        match File::open(self.root.path().join("broker.log")) {
            Ok(mut f) => {
                if let Err(e) = f.read_to_string(&mut s) {
                    return format!("<cannot read broker log: {e}>");
                }
            }
            Err(e) => return format!("<cannot open broker log: {e}>"),
        }
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    fn wait_ready(&mut self) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(st) = child.try_wait().context("polling the broker process")? {
                    self.child = None;
                    bail!(
                        "{} exited during start ({st}); its output:\n{}",
                        self.kind.name(),
                        self.log_tail(40)
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
                    "{} did not accept TCP on {addr} within {START_TIMEOUT:?}; its output:\n{}",
                    self.kind.name(),
                    self.log_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RunningBroker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The kernel's clock ticks per second for `/proc/PID/stat` times, from `getconf CLK_TCK`
/// (reading it via libc would need unsafe code, which the workspace forbids). Falls back to
/// 100, the value on every mainstream Linux build, and says so.
pub fn clk_tck() -> (f64, &'static str) {
    let out = Command::new("getconf").arg("CLK_TCK").output();
    if let Ok(out) = out {
        if out.status.success() {
            if let Ok(v) = String::from_utf8_lossy(&out.stdout).trim().parse::<u32>() {
                if v > 0 {
                    return (f64::from(v), "getconf CLK_TCK");
                }
            }
        }
    }
    (100.0, "assumed 100 (getconf CLK_TCK unavailable)")
}

/// A loopback port that was free a moment ago: bind port 0, read it, release it.
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
    let port = l.local_addr().context("reading the bound address")?.port();
    Ok(port)
}

/// utime + stime (fields 14 and 15) from `/proc/PID/stat`. The command name (field 2) may
/// contain spaces and parentheses, so fields are counted after the last `)`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so utime (14) is index 11 and stime (15) is 12.
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The command (thread) name in a `/proc/.../stat` line: between the first `(` and the last `)`.
fn thread_name(stat: &str) -> Option<&str> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    stat.get(open + 1..close)
}

/// VmHWM from `/proc/PID/status`, in bytes (the kernel prints kB).
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `/proc/loadavg`'s 1, 5 and 15 minute load averages, e.g. "1.52 2.01 3.90".
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Machine facts for the report header: CPU count and model, kernel.
pub fn machine_facts() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown kernel".to_string());
    let mem_gib = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0.0, |kb| kb as f64 / (1024.0 * 1024.0));
    format!("{cpus} cores ({model}), {mem_gib:.0} GiB RAM, Linux {kernel}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_skip_a_command_name_with_spaces_and_parens() {
        let stat = "1234 (sk iff) (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 5 0";
        assert_eq!(parse_cpu_ticks(stat), Some(325));
        assert_eq!(parse_cpu_ticks("1234 (skiff) S 1 2"), None);
        assert_eq!(parse_cpu_ticks("no paren"), None);
        assert_eq!(thread_name(stat), Some("sk iff) (x)"));
        assert_eq!(
            thread_name("1 (skiff-cleaner-0) S"),
            Some("skiff-cleaner-0")
        );
        assert_eq!(thread_name("1 )( S"), None);
    }

    #[test]
    fn vm_hwm_is_read_in_bytes() {
        let status = "Name:\tskiff\nVmPeak:\t  9000 kB\nVmHWM:\t    4096 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(4096 * 1024));
        assert_eq!(parse_vm_hwm("VmRSS: 1 kB\n"), None);
    }

    #[test]
    fn own_process_can_be_parsed() {
        let stat = fs::read_to_string("/proc/self/stat").unwrap();
        let status = fs::read_to_string("/proc/self/status").unwrap();
        assert!(parse_cpu_ticks(&stat).is_some());
        assert!(parse_vm_hwm(&status).unwrap() > 0);
    }

    #[test]
    fn missing_binary_is_reported_with_a_hint() {
        let kind = BrokerKind::Skiff {
            bin: PathBuf::from("/nonexistent/skiff"),
        };
        let err = kind.check().unwrap_err().to_string();
        assert!(err.contains("--broker-bin"), "{err}");
    }
}
