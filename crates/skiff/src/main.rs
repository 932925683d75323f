//! The `skiff` binary: command line, logging, wiring, signals, and the `compaction-status`
//! subcommand that reads a running broker's metrics listener, `compact` (dry run and compact
//! now through the HTTP API), and `dev-certs` (throwaway TLS
//! certificates for development), and `hash-password` (a PLAIN password hash for
//! `sasl.plain.hashed.users`).

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod compact;
mod compaction_status;
mod dev_certs;
mod exposition;
mod hash_password;
mod scrape;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use skiff_broker::background::Housekeeper;
use skiff_broker::Broker;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info, warn};

/// A single-node broker that speaks the Apache Kafka protocol.
#[derive(Parser, Debug)]
#[command(name = "skiff", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// TOML config file (`[broker]` with Kafka broker property names, `[[topic]]` entries).
    #[arg(long, env = "SKIFF_CONFIG")]
    config: Option<PathBuf>,
    /// Override one broker property, e.g. `--set log.dirs=/var/lib/skiff` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Log filter in RUST_LOG syntax, e.g. `info,skiff_broker=debug` (also `SKIFF_LOG`;
    /// without either, `RUST_LOG`; without that, `info`).
    #[arg(long, env = "SKIFF_LOG")]
    log: Option<String>,
    /// Log format: `text` or `json`.
    #[arg(long, default_value = "text")]
    log_format: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the compaction status of every compacted partition of a running broker, read
    /// from its metrics listener (`metrics.listener` in `[broker]`).
    CompactionStatus {
        /// HOST:PORT of the broker's `metrics.listener`.
        #[arg(long, value_name = "HOST:PORT")]
        metrics: String,
        /// Show only this topic's partitions.
        #[arg(long)]
        topic: Option<String>,
    },
    /// Show what a compaction pass would do now (--dry-run), or run one now and wait for it,
    /// through a running broker's HTTP API (`skiff.http.listener`).
    Compact {
        /// HOST:PORT of the broker's `skiff.http.listener`.
        #[arg(long, value_name = "HOST:PORT")]
        http: String,
        #[arg(long)]
        topic: String,
        /// Only this partition (default: every partition of the topic).
        #[arg(long)]
        partition: Option<i32>,
        /// Report what a pass would remove, without changing anything.
        #[arg(long)]
        dry_run: bool,
        /// Use https, trusting the CA certificates (PEM) in this file.
        #[arg(long, value_name = "PATH")]
        ca_file: Option<PathBuf>,
        /// Basic authentication as this user; the password is read from SKIFF_HTTP_PASSWORD.
        #[arg(long)]
        user: Option<String>,
        /// How long to wait for the pass to finish, in seconds.
        #[arg(long, default_value_t = 600)]
        wait_seconds: u64,
    },
    /// FOR DEVELOPMENT ONLY: write a throwaway CA, a server certificate for the given host
    /// names and a client certificate (PEM) into DIR, and print the config lines to use them.
    DevCerts {
        /// Directory to write ca.pem, ca-key.pem, server.pem, client.pem, client-key.pem.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// Host name or IP address the server certificate is for (repeatable; default
        /// localhost and 127.0.0.1).
        #[arg(long = "host", value_name = "NAME")]
        hosts: Vec<String>,
    },
    /// Print a salted hash of a PLAIN user's password for `sasl.plain.hashed.users`; the
    /// password is read from the first line of standard input.
    HashPassword {
        /// SCRAM-SHA-512 or SCRAM-SHA-256 (the PBKDF2 hash behind the stored form).
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
        /// PBKDF2 iterations, 4096..=16384 (default 8192).
        #[arg(long)]
        iterations: Option<u32>,
        /// Print `<user>=<hash>`, the form of a `sasl.plain.hashed.users` entry.
        #[arg(long)]
        user: Option<String>,
    },
}

/// Upper bound of the drain (in-flight requests finishing) after SIGTERM; the rest of
/// `shutdown.timeout.ms` is left for flushing and fsync.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A start-up, config or shutdown error is the user's to fix: one line with its causes
/// (`{:#}`) and exit status 1. Returning the error from `main` would print it with `{:?}`,
/// which adds a Rust backtrace whenever `RUST_BACKTRACE` is set; backtraces are for bugs
/// (panics), and the panic hook still prints those.
fn main() -> std::process::ExitCode {
    match try_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skiff: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn try_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::CompactionStatus { metrics, topic }) = &cli.command {
        return compaction_status::run(metrics, topic.as_deref());
    }
    if let Some(Command::Compact {
        http,
        topic,
        partition,
        dry_run,
        ca_file,
        user,
        wait_seconds,
    }) = &cli.command
    {
        return compact::run(&compact::Options {
            http: http.clone(),
            topic: topic.clone(),
            partition: *partition,
            dry_run: *dry_run,
            ca_file: ca_file.clone(),
            user: user.clone(),
            password: std::env::var("SKIFF_HTTP_PASSWORD").ok(),
            wait: Duration::from_secs(*wait_seconds),
        });
    }
    if let Some(Command::DevCerts { dir, hosts }) = &cli.command {
        return dev_certs::run(dir, hosts);
    }
    if let Some(Command::HashPassword {
        mechanism,
        iterations,
        user,
    }) = &cli.command
    {
        return hash_password::run(mechanism, *iterations, user.as_deref());
    }
    let filter = cli
        .log
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".to_string());
    init_logging(&filter, &cli.log_format)?;
    let env = std::env::vars().filter(|(k, _)| k.starts_with("SKIFF_"));
    let (config, warnings) = skiff_config::load(cli.config.as_deref(), &cli.set, env)?;
    for warning in warnings {
        warn!("{warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("skiff-worker")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run(config))
}

fn init_logging(filter: &str, format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .with_context(|| format!("bad log filter {filter:?}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        "text" => builder.init(),
        "json" => builder.json().init(),
        other => bail!("--log-format must be text or json, not {other:?}"),
    }
    Ok(())
}

async fn run(config: skiff_config::BrokerConfig) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    if config.listeners.is_empty() {
        bail!("listeners is empty");
    }
    // Read and check every SSL listener's certificates and keys before anything starts.
    for l in &config.listeners {
        if matches!(
            skiff_config::listener_protocol(&config, &l.name),
            Some(skiff_config::SecurityProtocol::Ssl | skiff_config::SecurityProtocol::SaslSsl)
        ) {
            skiff_broker::net::tls::listener_tls(&config, &l.name)
                .map_err(|e| anyhow::anyhow!("TLS settings of listener {l}: {e}"))?;
        }
    }
    let budget = Duration::from_millis(u64::try_from(config.shutdown_timeout_ms).unwrap_or(0));
    let broker: Arc<Broker> = tokio::task::spawn_blocking(move || Broker::start(config))
        .await
        .context("storage start-up task")??;
    // Bind every listener before serving any, so a taken port fails the start as a whole;
    // metrics first, so it is up once a Kafka port accepts (what readiness probes wait for).
    let metrics_listener = match &broker.config.metrics_listener {
        Some(hp) => Some(
            TcpListener::bind(hp.to_string())
                .await
                .with_context(|| format!("binding metrics.listener {hp}"))?,
        ),
        None => None,
    };
    let http_listener = match &broker.config.skiff_http_listener {
        Some(hp) => {
            let (router, tls) = skiff_broker::http::from_config(broker.clone())
                .map_err(|e| anyhow::anyhow!("HTTP API: {e}"))?;
            let listener = TcpListener::bind(hp.to_string())
                .await
                .with_context(|| format!("binding skiff.http.listener {hp}"))?;
            Some((listener, router, tls))
        }
        None => None,
    };
    let mut bound = Vec::new();
    for l in &broker.config.listeners {
        let addr = format!("{}:{}", l.host, l.port);
        let listener = TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding listener {l} ({addr})"))?;
        bound.push((l.name.clone(), listener));
    }
    let housekeeper =
        Housekeeper::start(broker.clone()).context("starting the housekeeping thread")?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    let mut addrs = Vec::new();
    for (name, listener) in bound {
        if let Ok(addr) = listener.local_addr() {
            addrs.push(format!("{name}://{addr}"));
        }
        let (broker, stop_rx) = (broker.clone(), stop_rx.clone());
        servers.spawn(async move {
            skiff_broker::serve_listener(listener, &name, broker, stop_rx).await;
        });
    }
    let metrics_addr = match metrics_listener {
        Some(listener) => {
            let addr = listener.local_addr().map(|a| a.to_string()).ok();
            let (broker, stop_rx) = (broker.clone(), stop_rx.clone());
            servers.spawn(skiff_broker::http::server::serve(
                listener,
                "metrics.listener",
                skiff_broker::http::metrics_router(broker),
                None,
                stop_rx,
            ));
            addr
        }
        None => None,
    };
    let http_addr = match http_listener {
        Some((listener, router, tls)) => {
            let addr = listener.local_addr().map(|a| a.to_string()).ok();
            servers.spawn(skiff_broker::http::server::serve(
                listener,
                "skiff.http.listener",
                router,
                tls,
                stop_rx.clone(),
            ));
            addr
        }
        None => None,
    };
    let mut signals = Signals::install()?;
    info!(
        listeners = %addrs.join(","),
        node_id = broker.node_id(),
        metrics = metrics_addr.as_deref().unwrap_or("off"),
        http = http_addr.as_deref().unwrap_or("off"),
        startup_ms = started.elapsed().as_millis() as u64,
        "skiff is ready"
    );

    signals.recv().await;
    let stopping = std::time::Instant::now();
    info!("shutting down: no new connections, finishing requests in hand");
    let _ = stop_tx.send(true);
    // A second signal skips the drain; data is safe either way (recovery on next start).
    tokio::spawn(async move {
        signals.recv().await;
        warn!("second signal: exiting at once");
        std::process::exit(130);
    });
    // Each listener task returns once its listening socket is closed and every connection
    // it accepted has answered the requests in hand and ended.
    let drain = DRAIN_TIMEOUT.min(budget / 2);
    let drained = tokio::time::timeout(drain, async {
        while servers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(
            drain_ms = drain.as_millis() as u64,
            "connections still busy after the drain; closing them"
        );
        // Aborts the listener tasks, which abort their connection tasks. An append already
        // running on a blocking thread still finishes under its log's lock before the log
        // is closed, or is refused with an error after.
        servers.shutdown().await;
    }
    // Only now do the coordinators, cleaner and flusher stop (joined in order) and the logs
    // close: see Broker::shutdown.
    let flush = tokio::task::spawn_blocking(move || {
        housekeeper.stop();
        broker.shutdown()
    });
    let left = budget.saturating_sub(stopping.elapsed());
    let result = match tokio::time::timeout(left, flush).await {
        Ok(joined) => joined.context("shutdown task")?,
        Err(_) => {
            error!(
                shutdown_timeout_ms = budget.as_millis() as u64,
                "flush did not finish within shutdown.timeout.ms; exiting: the next start recovers the logs"
            );
            std::process::exit(1);
        }
    };
    if let Err(e) = result {
        error!(error = %e, "unclean shutdown: the next start recovers the logs");
        return Err(e.into());
    }
    Ok(())
}

/// SIGTERM and SIGINT. Installed before "skiff is ready" is logged, so a signal sent as soon
/// as the broker says it is ready starts a clean shutdown instead of the default kill.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
