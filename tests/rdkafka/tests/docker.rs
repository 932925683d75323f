//! The container's broker without a container: runs the binary with the command and
//! environment `docker/compose.yaml` gives the `skiff` service (`--config config/docker.toml`,
//! `SKIFF_ADVERTISED_LISTENERS` from the compose default), changing only what a test machine
//! needs — the data dir, the ports (9092, 19092 and the metrics port 9644 become free ports)
//! and 0.0.0.0 becoming 127.0.0.1 so only loopback is bound. Checks Kafka's per-listener rule: a client that
//! connects to the HOST listener is told `localhost:<host port>`, one on the DOCKER listener
//! `skiff:<docker port>`; and librdkafka produces and consumes through the HOST listener.
#![allow(clippy::unwrap_used)]

use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use kafka_protocol::messages::{
    ApiKey, DescribeClusterRequest, DescribeClusterResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, MetadataRequest, MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::raw::RawClient;
use skiff_e2e::{free_port, skiff_bin, unique_topic, workspace_root, START_TIMEOUT};

/// Container ports in config/docker.toml and compose.yaml.
const DOCKER_PORT: &str = "9092";
const HOST_PORT: &str = "19092";
/// The metrics port in config/docker.toml and compose.yaml.
const METRICS_PORT: &str = "9644";

/// The value of `key = "..."` in the `[broker]` table of config/docker.toml (a plain string
/// line; the file keeps these keys on one line each).
fn toml_string(text: &str, key: &str) -> Result<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
        .ok_or_else(|| anyhow!("config/docker.toml has no `{key} = \"...\"` line"))
}

/// The default of `SKIFF_ADVERTISED_LISTENERS: ${SKIFF_ADVERTISED_LISTENERS:-...}` in
/// docker/compose.yaml: what the container gets when the user sets nothing.
fn compose_advertised_default(text: &str) -> Result<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("SKIFF_ADVERTISED_LISTENERS:"))
        .ok_or_else(|| anyhow!("compose.yaml sets no SKIFF_ADVERTISED_LISTENERS"))?;
    let start = line
        .find(":-")
        .ok_or_else(|| anyhow!("no `:-default` in {line:?}"))?;
    let end = line
        .rfind('}')
        .ok_or_else(|| anyhow!("no closing brace in {line:?}"))?;
    Ok(line[start + 2..end].to_string())
}

/// Rewrites container ports to the test's ports (`:9092` -> `:docker`, `:19092` -> `:host`).
fn map_ports(listeners: &str, docker: u16, host: u16) -> String {
    listeners
        .split(',')
        .map(|l| {
            let l = l.trim();
            if let Some(rest) = l.strip_suffix(&format!(":{HOST_PORT}")) {
                format!("{rest}:{host}")
            } else if let Some(rest) = l.strip_suffix(&format!(":{DOCKER_PORT}")) {
                format!("{rest}:{docker}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The broker process as the container would run it; killed on drop.
struct ContainerLike {
    child: Option<Child>,
    dir: tempfile::TempDir,
    docker_port: u16,
    host_port: u16,
    metrics_port: u16,
}

impl ContainerLike {
    fn start() -> Result<ContainerLike> {
        let root = workspace_root();
        let config = root.join("config").join("docker.toml");
        let toml = fs::read_to_string(&config).context("reading config/docker.toml")?;
        let compose = fs::read_to_string(root.join("docker").join("compose.yaml"))
            .context("reading docker/compose.yaml")?;
        let dir = tempfile::Builder::new().prefix("skiff-docker-").tempdir()?;
        let (docker_port, host_port, metrics_port) = (free_port()?, free_port()?, free_port()?);
        if docker_port == host_port || metrics_port == docker_port || metrics_port == host_port {
            bail!("free_port returned the same port twice");
        }
        let metrics = toml_string(&toml, "metrics.listener")?
            .replace("0.0.0.0", "127.0.0.1")
            .replace(&format!(":{METRICS_PORT}"), &format!(":{metrics_port}"));
        let listeners = map_ports(
            &toml_string(&toml, "listeners")?.replace("0.0.0.0", "127.0.0.1"),
            docker_port,
            host_port,
        );
        let advertised = map_ports(
            &compose_advertised_default(&compose)?,
            docker_port,
            host_port,
        );
        let data = dir.path().join("data");
        let log = File::create(dir.path().join("broker.log"))?;
        let mut cmd = Command::new(skiff_bin());
        cmd.arg("--config")
            .arg(&config)
            .arg("--set")
            .arg(format!("listeners={listeners}"))
            .arg("--set")
            .arg(format!("metrics.listener={metrics}"))
            .arg("--set")
            .arg(format!("log.dirs={}", data.display()));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SKIFF_") {
                cmd.env_remove(&name);
            }
        }
        // compose.yaml's environment, ports mapped.
        cmd.env("SKIFF_ADVERTISED_LISTENERS", &advertised)
            .env("SKIFF_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", skiff_bin().display()))?;
        let mut me = ContainerLike {
            child: Some(child),
            dir,
            docker_port,
            host_port,
            metrics_port,
        };
        me.wait_ready()?;
        Ok(me)
    }

    fn logs(&self) -> String {
        fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Both listeners accept TCP (the health check's test, on each port).
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        for port in [self.docker_port, self.host_port] {
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            loop {
                if let Some(c) = self.child.as_mut() {
                    if let Some(st) = c.try_wait()? {
                        self.child = None;
                        bail!("broker exited during start ({st}):\n{}", self.logs());
                    }
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break;
                }
                if Instant::now() > deadline {
                    bail!(
                        "{addr} not accepting after {START_TIMEOUT:?}:\n{}",
                        self.logs()
                    );
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<std::process::ExitStatus> {
        let mut child = self.child.take().ok_or_else(|| anyhow!("not running"))?;
        let st = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()?;
        if !st.success() {
            bail!("kill -TERM failed: {st}");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = child.try_wait()? {
                return Ok(st);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("no exit within 30 s of SIGTERM:\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ContainerLike {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!("----- skiff broker output -----\n{}\n-----", self.logs());
        }
    }
}

/// What Metadata, DescribeCluster and FindCoordinator tell a client connected to `port`.
fn advertised_via(port: u16) -> Result<Vec<(String, i32)>> {
    let mut c = RawClient::connect(&format!("127.0.0.1:{port}"))?;
    let md: MetadataResponse = c.call(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(Some(vec![])),
    )?;
    let dc: DescribeClusterResponse = c.call(
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default(),
    )?;
    let fc: FindCoordinatorResponse = c.call(
        ApiKey::FindCoordinator,
        3,
        &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("docker-group")),
    )?;
    let mut out = Vec::new();
    for b in &md.brokers {
        out.push((b.host.to_string(), b.port));
    }
    for b in &dc.brokers {
        out.push((b.host.to_string(), b.port));
    }
    if fc.error_code != 0 {
        bail!("FindCoordinator error {}", fc.error_code);
    }
    out.push((fc.host.to_string(), fc.port));
    Ok(out)
}

#[test]
fn compose_settings_parse_as_expected() {
    assert_eq!(
        map_ports("DOCKER://0.0.0.0:9092,HOST://0.0.0.0:19092", 1000, 2000),
        "DOCKER://0.0.0.0:1000,HOST://0.0.0.0:2000"
    );
    let root = workspace_root();
    let compose = fs::read_to_string(root.join("docker/compose.yaml")).unwrap();
    let toml = fs::read_to_string(root.join("config/docker.toml")).unwrap();
    // The compose default and the file agree, so a container without the variable set and
    // one with the default behave the same.
    assert_eq!(
        compose_advertised_default(&compose).unwrap(),
        toml_string(&toml, "advertised.listeners").unwrap()
    );
    assert_eq!(toml_string(&toml, "log.dirs").unwrap(), "/var/lib/skiff");
    assert_eq!(
        toml_string(&toml, "metrics.listener").unwrap(),
        format!("0.0.0.0:{METRICS_PORT}")
    );
    // Published as "${SKIFF_PUBLISH_ADDRESS:-127.0.0.1}:${SKIFF_METRICS_PORT:-9644}:9644".
    assert!(compose.contains(&format!(":-{METRICS_PORT}}}:{METRICS_PORT}\"")));
}

/// `GET /metrics` on the mapped metrics port: (status code, body).
fn scrape(port: u16) -> Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("no status line in {text:?}"))?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((code, body.to_string()))
}

#[test]
fn each_listener_advertises_its_own_address() {
    let mut b = ContainerLike::start().unwrap();
    let host = advertised_via(b.host_port).unwrap();
    let docker = advertised_via(b.docker_port).unwrap();
    let want_host = ("localhost".to_string(), i32::from(b.host_port));
    let want_docker = ("skiff".to_string(), i32::from(b.docker_port));
    assert_eq!(host, vec![want_host.clone(); 3], "HOST listener answers");
    assert_eq!(docker, vec![want_docker; 3], "DOCKER listener answers");
    // The metrics listener the compose file publishes serves Prometheus text; the two raw
    // clients above each connected once to each listener.
    let (code, body) = scrape(b.metrics_port).unwrap();
    assert_eq!(code, 200, "{body}");
    let accepted = body
        .lines()
        .find_map(|l| l.strip_prefix("skiff_connections_accepted_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(accepted.is_some_and(|n| n >= 2.0), "{body}");
    let logs = b.logs();
    assert!(logs.contains("skiff is ready"), "{logs}");
    assert!(
        logs.contains(&format!("DOCKER://127.0.0.1:{}", b.docker_port))
            && logs.contains(&format!("HOST://127.0.0.1:{}", b.host_port)),
        "ready line names both listeners: {logs}"
    );
    let st = b.stop().unwrap();
    assert!(st.success(), "exit status after SIGTERM: {st}");
    assert!(b.logs().contains("clean shutdown complete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_produces_and_consumes_through_the_host_listener() {
    let b = ContainerLike::start().unwrap();
    // As a client on the host would: bootstrap on the published port; librdkafka then
    // connects to the advertised HOST address (localhost:<port>) for everything else.
    let bootstrap = format!("localhost:{}", b.host_port);
    let mut base = ClientConfig::new();
    base.set("bootstrap.servers", &bootstrap)
        .set("socket.timeout.ms", "10000")
        .set("broker.address.family", "v4");
    let topic = unique_topic("docker");
    let p: FutureProducer = base
        .clone()
        .set("acks", "all")
        .set("message.timeout.ms", "15000")
        .create()
        .unwrap();
    for i in 0..20 {
        let v = format!("v{i}");
        let k = format!("k{i}");
        let d = p
            .send(
                FutureRecord::to(&topic).partition(0).key(&k).payload(&v),
                Duration::from_secs(15),
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        assert_eq!(d.offset, i);
    }
    drop(p);

    let c: BaseConsumer = base
        .clone()
        .set("group.id", "docker-e2e")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap();
    let md = c
        .fetch_metadata(Some(&topic), Duration::from_secs(10))
        .unwrap();
    let brokers: Vec<(String, i32)> = md
        .brokers()
        .iter()
        .map(|b| (b.host().to_string(), b.port()))
        .collect();
    assert_eq!(
        brokers,
        vec![("localhost".to_string(), i32::from(b.host_port))]
    );
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 20 && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(500)) {
            let m = m.unwrap();
            got.push((
                m.offset(),
                String::from_utf8(m.payload().unwrap().to_vec()).unwrap(),
            ));
        }
    }
    let want: Vec<(i64, String)> = (0..20).map(|i| (i, format!("v{i}"))).collect();
    assert_eq!(got, want);
    // The data went to the --set data dir, as it would to the container's volume.
    assert!(b.data_dir().join(format!("{topic}-0")).is_dir());
}
