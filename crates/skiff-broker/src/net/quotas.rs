//! Connection quotas, as Kafka's `ConnectionQuotas`: `max.connections` bounds the connections
//! open at once over every listener (at the limit the listeners stop accepting until one
//! closes; nobody is refused), and `max.connections.per.ip` / `max.connections.per.ip.overrides`
//! bound those from one address (a connection over its address's limit is accepted and closed
//! at once).
//!
//! Thread safety: the broker-wide count is a tokio `Semaphore` (listeners wait on it without
//! blocking a worker); the per-address counts sit behind a std `Mutex` that is held only to
//! update a map entry, never across `.await`.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct ConnectionQuotas {
    total: Arc<Semaphore>,
    /// `max.connections.per.ip`.
    per_ip: usize,
    /// `max.connections.per.ip.overrides`, by resolved address.
    overrides: HashMap<IpAddr, usize>,
    /// Open connections by peer address (entries at 0 are removed).
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection: holds its broker-wide permit and its address's count until
/// dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    ip: IpAddr,
    quotas: Arc<ConnectionQuotas>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.quotas.lock();
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A connection over its address's limit.
#[derive(Debug, PartialEq, Eq)]
pub struct TooManyConnections {
    pub ip: IpAddr,
    pub limit: usize,
}

fn to_usize(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl ConnectionQuotas {
    /// At most `max` connections at once, no per-address limit (the metrics listener).
    pub fn bounded(max: usize) -> Arc<ConnectionQuotas> {
        Arc::new(ConnectionQuotas {
            total: Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS))),
            per_ip: usize::MAX,
            overrides: HashMap::new(),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// The broker's quotas from `max.connections`, `max.connections.per.ip` and
    /// `max.connections.per.ip.overrides`. Override hosts are resolved here, once, as Kafka
    /// does at start-up (so this may block on DNS; call it from a blocking context). A name
    /// that does not resolve is an error; a name with several addresses applies to each.
    pub fn from_config(config: &skiff_config::BrokerConfig) -> Result<Arc<Self>, String> {
        let mut overrides = HashMap::new();
        for (host, count) in &config.max_connections_per_ip_overrides {
            let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => (host.as_str(), 0)
                    .to_socket_addrs()
                    .map_err(|e| {
                        format!("max.connections.per.ip.overrides: cannot resolve {host:?}: {e}")
                    })?
                    .map(|a| a.ip())
                    .collect(),
            };
            for ip in addrs {
                overrides.insert(ip, to_usize(*count));
            }
        }
        Ok(Arc::new(ConnectionQuotas {
            total: Arc::new(Semaphore::new(
                to_usize(config.max_connections).min(Semaphore::MAX_PERMITS),
            )),
            per_ip: to_usize(config.max_connections_per_ip),
            overrides,
            open: Mutex::new(HashMap::new()),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until fewer than `max.connections` connections are open (Kafka's acceptor
    /// blocks the same way); `None` only if the semaphore was closed.
    pub async fn wait_for_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.total.clone().acquire_owned().await.ok()
    }

    /// Counts a just-accepted connection from `ip` against its address's limit.
    pub fn admit(
        self: &Arc<Self>,
        permit: OwnedSemaphorePermit,
        ip: IpAddr,
    ) -> Result<Slot, TooManyConnections> {
        let limit = self.overrides.get(&ip).copied().unwrap_or(self.per_ip);
        let mut open = self.lock();
        let count = open.get(&ip).copied().unwrap_or(0);
        if count >= limit {
            return Err(TooManyConnections { ip, limit });
        }
        open.insert(ip, count + 1);
        drop(open);
        Ok(Slot {
            _permit: permit,
            ip,
            quotas: self.clone(),
        })
    }

    /// Connections open from `ip` (for tests and metrics).
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.lock().get(&ip).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sets: &[&str]) -> skiff_config::BrokerConfig {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        skiff_config::load(None, &sets, Vec::<(String, String)>::new())
            .unwrap()
            .0
    }

    #[tokio::test]
    async fn per_ip_limit_and_overrides_count_open_connections() {
        let q = ConnectionQuotas::from_config(&config(&[
            "max.connections=10",
            "max.connections.per.ip=2",
            "max.connections.per.ip.overrides=127.0.0.2:0,127.0.0.3:3",
        ]))
        .unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let a = q.admit(q.wait_for_slot().await.unwrap(), lo).unwrap();
        let _b = q.admit(q.wait_for_slot().await.unwrap(), lo).unwrap();
        let refused = q.admit(q.wait_for_slot().await.unwrap(), lo).err();
        assert_eq!(refused, Some(TooManyConnections { ip: lo, limit: 2 }));
        drop(a);
        assert_eq!(q.open_from(lo), 1);
        assert!(q.admit(q.wait_for_slot().await.unwrap(), lo).is_ok());
        let two: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(q.admit(q.wait_for_slot().await.unwrap(), two).is_err());
        let three: IpAddr = "127.0.0.3".parse().unwrap();
        let held: Vec<Slot> = (0..3)
            .map(|_| q.admit(q.total.clone().try_acquire_owned().unwrap(), three))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(held.len(), 3);
    }

    #[tokio::test]
    async fn max_connections_makes_the_next_wait_until_one_closes() {
        let q = ConnectionQuotas::from_config(&config(&["max.connections=1"])).unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let first = q.admit(q.wait_for_slot().await.unwrap(), lo).unwrap();
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), q.wait_for_slot()).await;
        assert!(
            waiting.is_err(),
            "a second slot was granted over max.connections=1"
        );
        drop(first);
        assert!(q.wait_for_slot().await.is_some());
    }
}
