//! The layout every page shares, HTML escaping, and the console's error page.
//!
//! Pages are built as strings: [`esc`] escapes every value that comes from the broker or the
//! request (topic names, keys, values, config values); markup is only ever written by this
//! crate. Responses carry a Content-Security-Policy that allows the console's own stylesheet
//! and script only (no inline script, nothing from other origins), forbid framing, and are not
//! cached (they show live state).

use std::fmt::Write as _;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::assets::asset_path;
use super::call::Caller;
use crate::http::errors::ApiError;

/// The sections of the navigation bar.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Section {
    Overview,
    Topics,
    Groups,
    Compaction,
}

const SECTIONS: [(Section, &str, &str); 4] = [
    (Section::Overview, "Overview", "/console"),
    (Section::Topics, "Topics", "/console/topics"),
    (Section::Groups, "Consumer groups", "/console/groups"),
    (Section::Compaction, "Compaction", "/console/compaction"),
];

/// `s` escaped for HTML text and double-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` escaped as one URL path segment or query value (RFC 3986 unreserved kept).
pub fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One page: its title, its section in the navigation, and the body's HTML (already escaped).
pub struct Page {
    pub title: String,
    pub section: Section,
    pub body: String,
}

impl Page {
    pub fn new(section: Section, title: impl Into<String>) -> Page {
        Page {
            title: title.into(),
            section,
            body: String::new(),
        }
    }

    /// Appends markup to the body.
    pub fn push(&mut self, html: &str) -> &mut Page {
        self.body.push_str(html);
        self
    }

    /// The whole document for `caller` (the header names the principal and read-only mode).
    pub fn render(&self, caller: &Caller) -> Response {
        let mut nav = String::new();
        for (section, label, href) in SECTIONS {
            let current = if section == self.section {
                " aria-current=\"page\""
            } else {
                ""
            };
            let _ = write!(nav, "<li><a href=\"{href}\"{current}>{label}</a></li>");
        }
        let read_only = caller.api.console.as_ref().is_some_and(|c| c.read_only);
        let badge = if read_only {
            "<span class=\"badge\">read-only</span>"
        } else {
            ""
        };
        let html = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title} · Skiff</title>\
             <link rel=\"stylesheet\" href=\"{css}\">\
             <link rel=\"icon\" href=\"{icon}\" type=\"image/svg+xml\">\
             <script src=\"{js}\" defer></script></head><body>\
             <a class=\"skip\" href=\"#main\">Skip to content</a>\
             <header><a class=\"brand\" href=\"/console\">Skiff</a>\
             <nav aria-label=\"Main\"><ul>{nav}</ul></nav>\
             <span class=\"who\">{who}{badge}</span></header>\
             <main id=\"main\"><h1>{title}</h1>{body}</main></body></html>",
            title = esc(&self.title),
            css = asset_path("console.css"),
            js = asset_path("console.js"),
            icon = asset_path("icon.svg"),
            who = esc(&caller.principal.to_string()),
            body = self.body,
        );
        html_response(StatusCode::OK, html)
    }
}

/// An HTML answer with the console's security headers.
pub fn html_response(status: StatusCode, html: String) -> Response {
    let mut r = (status, html).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A console request that failed: a 401 (the HTTP API's, with its challenge, so a browser
/// asks for credentials), or a page with a status and a message.
#[derive(Debug)]
pub enum PageError {
    Api(ApiError),
    Page { status: StatusCode, message: String },
}

impl PageError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError::Page {
            status,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    pub fn not_found(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn forbidden(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::FORBIDDEN, message)
    }

    pub fn bad_request(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::BAD_REQUEST, message)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::Api(e) => e.into_response(),
            PageError::Page { status, message } => {
                if status.is_server_error() {
                    tracing::warn!(%status, message, "console page failed");
                }
                let reason = status.canonical_reason().unwrap_or("Error");
                let html = format!(
                    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
                     <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                     <title>{code} {reason} · Skiff</title>\
                     <link rel=\"stylesheet\" href=\"{css}\">\
                     <link rel=\"icon\" href=\"{icon}\" type=\"image/svg+xml\"></head><body>\
                     <a class=\"skip\" href=\"#main\">Skip to content</a>\
                     <header><a class=\"brand\" href=\"/console\">Skiff</a></header>\
                     <main id=\"main\"><h1>{code} {reason}</h1>\
                     <p class=\"error\" role=\"alert\">{message}</p>\
                     <p><a href=\"/console\">Back to the overview</a></p></main></body></html>",
                    code = status.as_u16(),
                    css = asset_path("console.css"),
                    icon = asset_path("icon.svg"),
                    message = esc(&message),
                );
                html_response(status, html)
            }
        }
    }
}

/// A notice at the top of a page after an action (`?done=` of a redirect), as a status
/// region screen readers announce.
pub fn notice(done: Option<&str>) -> String {
    match done {
        Some(text) if !text.is_empty() => {
            format!("<p class=\"notice\" role=\"status\">{}</p>", esc(text))
        }
        _ => String::new(),
    }
}

/// A table: a caption (for screen readers and people), headers, and rows of cells that are
/// already HTML. Numeric columns (`numeric[i]`) are right-aligned.
pub fn table(caption: &str, headers: &[&str], numeric: &[bool], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "<div class=\"scroll\"><table><caption>{}</caption><thead><tr>",
        esc(caption)
    );
    for (i, h) in headers.iter().enumerate() {
        let class = if numeric.get(i).copied().unwrap_or(false) {
            " class=\"num\""
        } else {
            ""
        };
        let _ = write!(out, "<th scope=\"col\"{class}>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\" class=\"empty\">None.</td></tr>",
            headers.len().max(1)
        );
    }
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if numeric.get(i).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn url_encodes_everything_but_unreserved() {
        assert_eq!(url("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(url("topic-1.x_~"), "topic-1.x_~");
    }
}
