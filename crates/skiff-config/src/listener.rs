//! Listener parsing: `listeners` / `advertised.listeners` entries of the form
//! `NAME://host:port` (IPv6 hosts in brackets), resolved against
//! `listener.security.protocol.map` (PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL).
//!
//! Pure functions; no I/O (hosts are not resolved here).

use std::collections::BTreeMap;
use std::fmt;

/// Kafka's security protocols (the right-hand side of `listener.security.protocol.map`).
const PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// Kafka's default map: every protocol name maps to itself.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT";

/// One listener endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// Listener name, upper-case (e.g. `PLAINTEXT`).
    pub name: String,
    /// Host to bind or advertise, without brackets for IPv6; empty = all interfaces (bind only).
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

/// Parse `listener.security.protocol.map` (`NAME:PROTOCOL,...`) into name -> protocol.
pub fn parse_protocol_map(raw: &str) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, proto) = entry
            .split_once(':')
            .ok_or_else(|| format!("entry `{entry}` is not NAME:PROTOCOL"))?;
        let name = name.trim().to_ascii_uppercase();
        let proto = proto.trim().to_ascii_uppercase();
        if name.is_empty() {
            return Err(format!("entry `{entry}` has an empty listener name"));
        }
        if !PROTOCOLS.contains(&proto.as_str()) {
            return Err(format!(
                "entry `{entry}`: unknown security protocol `{proto}` (expected one of {})",
                PROTOCOLS.join(", ")
            ));
        }
        if map.insert(name.clone(), proto).is_some() {
            return Err(format!("listener name `{name}` is mapped twice"));
        }
    }
    Ok(map)
}

/// Parse a comma-separated listener list. Every listener must have a name known to
/// `protocols` and have a unique name and port.
pub fn parse_listeners(
    raw: &str,
    protocols: &BTreeMap<String, String>,
) -> Result<Vec<Listener>, String> {
    let mut out: Vec<Listener> = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let l = parse_one(entry)?;
        if !protocols.contains_key(&l.name) {
            return Err(format!(
                "listener `{entry}` has name `{}`, which listener.security.protocol.map does not define",
                l.name
            ));
        }
        if out.iter().any(|o| o.name == l.name) {
            return Err(format!("listener name `{}` appears twice", l.name));
        }
        if out.iter().any(|o| o.port == l.port && o.port != 0) {
            return Err(format!("port {} is used by two listeners", l.port));
        }
        out.push(l);
    }
    if out.is_empty() {
        return Err("at least one listener is required".to_string());
    }
    Ok(out)
}

/// A plain `host:port` endpoint (IPv6 hosts in brackets), e.g. `metrics.listener`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// Host to bind, without brackets for IPv6.
    pub host: String,
    pub port: u16,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Parse `host:port` (`[v6]:port`). The host is required: binding every interface must be
/// asked for (`0.0.0.0:9100`), never implied by a missing host.
pub fn parse_host_port(raw: &str) -> Result<HostPort, String> {
    let raw = raw.trim();
    let bad = |why: &str| format!("`{raw}` is not HOST:PORT ({why}), e.g. 127.0.0.1:9100");
    let (host, port) = if let Some(stripped) = raw.strip_prefix('[') {
        stripped
            .split_once("]:")
            .ok_or_else(|| bad("bad IPv6 address"))?
    } else {
        raw.rsplit_once(':').ok_or_else(|| bad("missing port"))?
    };
    if host.contains(':') && !raw.starts_with('[') {
        return Err(bad("IPv6 hosts must be in brackets"));
    }
    if host.is_empty() {
        return Err(bad("missing host"));
    }
    if host.contains('/') || host.chars().any(char::is_whitespace) {
        return Err(bad("bad host"));
    }
    let port: u16 = port.parse().map_err(|_| bad("port must be 0..65535"))?;
    Ok(HostPort {
        host: host.to_string(),
        port,
    })
}

fn parse_one(entry: &str) -> Result<Listener, String> {
    let bad = |why: &str| format!("listener `{entry}` is not NAME://host:port ({why})");
    let (name, rest) = entry
        .split_once("://")
        .ok_or_else(|| bad("missing `://`"))?;
    let name = name.trim().to_ascii_uppercase();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(bad("bad listener name"));
    }
    let (host, port) = if let Some(stripped) = rest.strip_prefix('[') {
        let (h, p) = stripped
            .split_once("]:")
            .ok_or_else(|| bad("bad IPv6 address"))?;
        (h, p)
    } else {
        rest.rsplit_once(':').ok_or_else(|| bad("missing port"))?
    };
    if host.contains(':') && !rest.starts_with('[') {
        return Err(bad("IPv6 hosts must be in brackets"));
    }
    let port: u16 = port.parse().map_err(|_| bad("port must be 0..65535"))?;
    Ok(Listener {
        name,
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port() {
        let hp = parse_host_port("127.0.0.1:9100").unwrap();
        assert_eq!((hp.host.as_str(), hp.port), ("127.0.0.1", 9100));
        let v6 = parse_host_port(" [::1]:9100 ").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.to_string().as_str()),
            ("::1", "[::1]:9100")
        );
        for bad in [
            "",
            "9100",
            ":9100",
            "h:",
            "h:70000",
            "::1:9100",
            "http://h:1",
            "[::1]",
        ] {
            assert!(parse_host_port(bad).is_err(), "{bad}");
        }
    }

    fn defaults() -> BTreeMap<String, String> {
        parse_protocol_map(DEFAULT_PROTOCOL_MAP).unwrap()
    }

    #[test]
    fn parses_plaintext_ipv4_ipv6_and_empty_host() {
        let ls = parse_listeners("PLAINTEXT://127.0.0.1:9092", &defaults()).unwrap();
        assert_eq!(
            ls,
            vec![Listener {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092
            }]
        );
        let ls = parse_listeners("plaintext://[::1]:9093", &defaults()).unwrap();
        assert_eq!(ls[0].host, "::1");
        assert_eq!(ls[0].to_string(), "PLAINTEXT://[::1]:9093");
        let ls = parse_listeners("PLAINTEXT://:9092", &defaults()).unwrap();
        assert_eq!(ls[0].host, "");
    }

    #[test]
    fn ssl_and_plaintext_listeners_together() {
        let ls = parse_listeners(
            "SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
            &defaults(),
        )
        .unwrap();
        assert_eq!(ls.len(), 2);
        assert_eq!(ls[0].name, "SSL");
        let map = parse_protocol_map("EXTERNAL:SSL,LOCAL:PLAINTEXT").unwrap();
        assert_eq!(map.get("EXTERNAL").map(String::as_str), Some("SSL"));
        let e = parse_listeners("SSL://h:1", &map).unwrap_err();
        assert!(
            e.contains("listener.security.protocol.map does not define"),
            "{e}"
        );
        assert_eq!(
            parse_protocol_map(DEFAULT_PROTOCOL_MAP).unwrap().len(),
            4,
            "Kafka's default map names the four protocols"
        );
    }

    #[test]
    fn custom_names_need_a_plaintext_mapping() {
        let map = parse_protocol_map("INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT").unwrap();
        let ls =
            parse_listeners("INTERNAL://0.0.0.0:9092, EXTERNAL://0.0.0.0:19092", &map).unwrap();
        assert_eq!(ls.len(), 2);
        let e = parse_listeners("OTHER://h:1", &map).unwrap_err();
        assert!(e.contains("does not define"), "{e}");
    }

    #[test]
    fn accepts_sasl_and_refuses_garbage() {
        assert!(parse_listeners("SASL_PLAINTEXT://h:9093", &defaults()).is_ok());
        assert!(parse_listeners("SASL_SSL://h:9093,PLAINTEXT://h:9092", &defaults()).is_ok());
        assert!(parse_listeners("127.0.0.1:9092", &defaults()).is_err());
        assert!(parse_listeners("PLAINTEXT://h:99999", &defaults()).is_err());
        assert!(parse_listeners("PLAINTEXT://h:1,PLAINTEXT://h:2", &defaults()).is_err());
        assert!(parse_listeners("", &defaults()).is_err());
        assert!(parse_protocol_map("A:TLS").is_err());
    }
}
