//! Reading `/proc` for the benchmark: CPU ticks and peak/current RSS of a process or of its
//! threads, the clock tick rate, load average and machine facts for report headers.
//!
//! Owns only parsing and reading; pure apart from reading `/proc` files (and running
//! `getconf CLK_TCK` once). Thread-safe: no state. Writes nothing to disk.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{anyhow, Context, Result};

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

/// utime + stime (fields 14 and 15) from `/proc/PID/stat`. The command name (field 2) may
/// contain spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so utime (14) is index 11 and stime (15) is 12.
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The command (thread) name in a `/proc/.../stat` line: between the first `(` and the last `)`.
pub fn thread_name(stat: &str) -> Option<&str> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    stat.get(open + 1..close)
}

/// VmHWM from `/proc/PID/status`, in bytes (the kernel prints kB).
pub fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// VmRSS (current resident set) from `/proc/PID/status`, in bytes.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Cumulative resource use of a whole process (all threads) at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcSample {
    /// user + system CPU seconds since the process started.
    pub cpu_secs: f64,
    /// Peak resident set size so far (VmHWM), in bytes.
    pub peak_rss_bytes: u64,
    /// Current resident set size (VmRSS), in bytes.
    pub rss_bytes: u64,
}

/// Reads CPU time, peak and current RSS of process `pid` from `/proc/PID/{stat,status}`.
pub fn sample(pid: u32, clk_tck: f64) -> Result<ProcSample> {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let stat = fs::read_to_string(proc_dir.join("stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    let status = fs::read_to_string(proc_dir.join("status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let ticks = parse_cpu_ticks(&stat)
        .ok_or_else(|| anyhow!("cannot parse utime/stime from /proc/{pid}/stat: {stat}"))?;
    let hwm =
        parse_vm_hwm(&status).ok_or_else(|| anyhow!("no VmHWM line in /proc/{pid}/status"))?;
    let rss =
        parse_vm_rss(&status).ok_or_else(|| anyhow!("no VmRSS line in /proc/{pid}/status"))?;
    Ok(ProcSample {
        cpu_secs: ticks as f64 / clk_tck,
        peak_rss_bytes: hwm,
        rss_bytes: rss,
    })
}

/// CPU seconds (user + system) used so far by the threads of `pid` whose name starts with
/// `prefix`, from `/proc/PID/task/*/stat`. Threads that exited are not counted.
pub fn threads_cpu_secs(pid: u32, prefix: &str, clk_tck: f64) -> Result<f64> {
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
        assert_eq!(parse_vm_rss(status), Some(100 * 1024));
    }

    #[test]
    fn own_process_can_be_parsed() {
        let stat = fs::read_to_string("/proc/self/stat").unwrap();
        let status = fs::read_to_string("/proc/self/status").unwrap();
        assert!(parse_cpu_ticks(&stat).is_some());
        assert!(parse_vm_hwm(&status).unwrap() > 0);
    }
}
