//! The stylesheet, the script and the icon (linked by every page, so browsers do not ask
//! for `/favicon.ico`), compiled into the binary (`include_str!`) and served with
//! a long cache lifetime under a name that changes with the crate version.

use std::sync::Arc;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::http::HttpApi;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");
const ICON: &str = include_str!("assets/icon.svg");

/// The path of an asset as pages link it (versioned, so a new binary's assets are fetched).
pub fn asset_path(name: &str) -> String {
    format!("/console/assets/{}/{name}", env!("CARGO_PKG_VERSION"))
}

pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new().route("/console/assets/{version}/{name}", get(asset))
}

/// Assets need no authentication: they are the same for everyone and name nothing of the
/// broker's state.
async fn asset(Path((_version, name)): Path<(String, String)>) -> Response {
    let (body, kind) = match name.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        "icon.svg" => (ICON, "image/svg+xml"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=86400, immutable"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
