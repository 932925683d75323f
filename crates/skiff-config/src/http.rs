//! The HTTP API's authentication setting (`skiff.http.authentication`), parsed once here so
//! the config check at load and the broker's HTTP listener agree on its meaning.
//!
//! Pure functions; safe from any thread.

/// Which `Authorization` schemes the HTTP API accepts. Neither = no authentication (every
/// caller is `User:ANONYMOUS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpAuthentication {
    /// `Basic`: a PLAIN user's or a SCRAM user's password.
    pub basic: bool,
    /// `Bearer`: a JWT checked by the OAUTHBEARER validator.
    pub bearer: bool,
}

impl HttpAuthentication {
    /// Is any scheme required?
    pub fn required(&self) -> bool {
        self.basic || self.bearer
    }
}

/// Parses `none`, or a comma-separated set of `basic` and `bearer` (case-insensitive).
pub fn parse_http_authentication(value: &str) -> Result<HttpAuthentication, String> {
    let mut out = HttpAuthentication::default();
    let items: Vec<String> = value
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() || items == ["none"] {
        return Ok(out);
    }
    for item in &items {
        match item.as_str() {
            "basic" => out.basic = true,
            "bearer" => out.bearer = true,
            "none" => return Err("none cannot be combined with basic or bearer".into()),
            other => {
                return Err(format!(
                    "unknown scheme '{other}': expected none, basic, bearer or basic,bearer"
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert!(!parse_http_authentication("none").unwrap().required());
        assert!(!parse_http_authentication("").unwrap().required());
        let both = parse_http_authentication("Basic, bearer").unwrap();
        assert!(both.basic && both.bearer);
        let basic = parse_http_authentication("basic").unwrap();
        assert!(basic.basic && !basic.bearer);
        assert!(parse_http_authentication("none,basic").is_err());
        assert!(parse_http_authentication("digest")
            .unwrap_err()
            .contains("digest"));
    }
}
