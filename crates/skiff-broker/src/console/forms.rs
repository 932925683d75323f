//! The guard of every console action (a POST that changes something): the caller is
//! authenticated, the console is not read-only, and the form was sent by a console page of
//! this very origin. The last check stops cross-site request forgery: a browser sends a
//! cached Basic password with any request to this origin, even one another site's page
//! makes, but it also says where the request came from (`Sec-Fetch-Site`, `Origin`), which
//! another site cannot forge.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::response::Redirect;

use super::call::Caller;
use super::page::{url, PageError};
use crate::http::HttpApi;

/// An authenticated action from a same-origin console form.
pub struct Action(pub Caller);

impl FromRequestParts<Arc<HttpApi>> for Action {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        api: &Arc<HttpApi>,
    ) -> Result<Action, PageError> {
        let caller = Caller::from_request_parts(parts, api).await?;
        if caller.console()?.read_only {
            return Err(PageError::forbidden(
                "the console is read-only (skiff.console.read.only=true)",
            ));
        }
        if !same_origin(&parts.headers) {
            return Err(PageError::forbidden(
                "refused: the form was not sent from this console (cross-site or without an Origin header)",
            ));
        }
        Ok(Action(caller))
    }
}

/// Did the browser say the request comes from this origin? `Sec-Fetch-Site: same-origin`,
/// or else an `Origin` whose host and port are the `Host` the request was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return site.as_bytes() == b"same-origin";
    }
    let (Some(origin), Some(host)) = (headers.get(header::ORIGIN), headers.get(header::HOST))
    else {
        return false;
    };
    let (Ok(origin), Ok(host)) = (origin.to_str(), host.to_str()) else {
        return false;
    };
    origin
        .split_once("://")
        .is_some_and(|(scheme, rest)| matches!(scheme, "http" | "https") && rest == host)
}

/// The answer to a successful action: back to `path` (a console path, no query) with a
/// notice saying what was done (POST, redirect, GET: a reload does not repeat the action).
pub fn done(path: &str, message: &str) -> Redirect {
    Redirect::to(&format!("{path}?done={}", url(message)))
}

/// Checks a field of a form that must be given.
pub fn required<'a>(value: &'a Option<String>, name: &str) -> Result<&'a str, PageError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| PageError::bad_request(format!("{name} is required")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn fetch_metadata_decides_when_present() {
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(!same_origin(&headers(&[
            ("sec-fetch-site", "cross-site"),
            ("origin", "http://h:1"),
            ("host", "h:1")
        ])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "same-site")])));
    }

    #[test]
    fn origin_must_match_host() {
        assert!(same_origin(&headers(&[
            ("origin", "http://127.0.0.1:9"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(same_origin(&headers(&[
            ("origin", "https://h:443"),
            ("host", "h:443")
        ])));
        assert!(!same_origin(&headers(&[
            ("origin", "http://evil:9"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(!same_origin(&headers(&[
            ("origin", "null"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(!same_origin(&headers(&[("host", "127.0.0.1:9")])));
    }
}
