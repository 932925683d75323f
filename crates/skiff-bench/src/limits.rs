//! Physical limits of this machine, for context: loopback TCP bandwidth and sequential
//! write + fsync bandwidth of the file system that holds the brokers' data dirs.
//!
//! Owns: [`loopback_mb_per_sec`] and [`disk_write_fsync_mb_per_sec`]. Thread-safety: the
//! loopback test runs a reader thread and joins it. On-disk: one temporary file of the given
//! size in the given directory, removed before returning.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

const CHUNK: usize = 1 << 20;

/// Streams `bytes` from one loopback socket to another (1 MiB writes, a reader thread);
/// MB/s (10^6 bytes) from the first write to the last byte read.
pub fn loopback_mb_per_sec(bytes: u64) -> Result<f64> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding a loopback listener")?;
    let addr = l.local_addr().context("reading the listener address")?;
    let reader = thread::Builder::new()
        .name("bench-loopback-reader".into())
        .spawn(move || -> Result<(u64, Instant)> {
            let (mut s, _) = l.accept().context("accept")?;
            s.set_read_timeout(Some(Duration::from_secs(30)))
                .context("set_read_timeout")?;
            let mut buf = vec![0u8; CHUNK];
            let mut got = 0u64;
            loop {
                let n = s.read(&mut buf).context("loopback read")?;
                if n == 0 {
                    return Ok((got, Instant::now()));
                }
                got += n as u64;
            }
        })
        .context("spawning the loopback reader")?;
    let mut s = TcpStream::connect(addr).context("connecting to the loopback listener")?;
    let buf = vec![0xa5u8; CHUNK];
    let start = Instant::now();
    let mut left = bytes;
    while left > 0 {
        let n = usize::try_from(left.min(CHUNK as u64)).unwrap_or(CHUNK);
        s.write_all(&buf[..n]).context("loopback write")?;
        left -= n as u64;
    }
    drop(s);
    let (got, end) = reader
        .join()
        .map_err(|_| anyhow!("the loopback reader panicked"))??;
    if got != bytes {
        bail!("loopback reader got {got} of {bytes} bytes");
    }
    Ok(bytes as f64 / 1e6 / end.duration_since(start).as_secs_f64().max(1e-9))
}

/// Writes `bytes` sequentially (1 MiB writes) to a new file in `dir`, fsyncs it once at the
/// end, and returns MB/s over write + fsync. The file is removed afterwards.
pub fn disk_write_fsync_mb_per_sec(dir: &Path, bytes: u64) -> Result<f64> {
    let path = dir.join("skiff-bench-disk-test");
    let result = (|| {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let buf = vec![0x3cu8; CHUNK];
        let start = Instant::now();
        let mut left = bytes;
        while left > 0 {
            let n = usize::try_from(left.min(CHUNK as u64)).unwrap_or(CHUNK);
            f.write_all(&buf[..n]).context("disk test write")?;
            left -= n as u64;
        }
        f.sync_all().context("disk test fsync")?;
        Ok(bytes as f64 / 1e6 / start.elapsed().as_secs_f64().max(1e-9))
    })();
    let _ = std::fs::remove_file(&path);
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn both_limits_measure_something_positive() {
        assert!(loopback_mb_per_sec(8 << 20).unwrap() > 0.0);
        let dir = tempfile::tempdir().unwrap();
        assert!(disk_write_fsync_mb_per_sec(dir.path(), 4 << 20).unwrap() > 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
