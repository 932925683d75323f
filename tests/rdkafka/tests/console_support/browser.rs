//! A headless Chromium driven through Debian's chromedriver (WebDriver, with fantoccini), for
//! the console's browser tests.
//!
//! [`Browser::start`] launches chromedriver on a free loopback port and one Chromium session
//! (headless, sandbox off as root needs, a laptop-sized window). The console's Basic
//! credentials are set as an `Authorization` header on every request through the DevTools
//! protocol (`Network.setExtraHTTPHeaders`), so switching users is one call and no URL
//! carries a password. [`Browser::console_errors`] reads the browser's console log, where a
//! script error, a CSP violation or a failed subresource shows up as SEVERE.
//!
//! Every wait is bounded; chromedriver is killed when the value drops.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use skiff_e2e::free_port;

/// How long a page or an element may take to appear.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(20);

/// Laptop and phone window sizes the pages are checked at.
pub const LAPTOP: (u32, u32) = (1366, 900);
pub const PHONE: (u32, u32) = (390, 844);

pub struct Browser {
    pub client: Client,
    driver: Child,
    /// `http://host:port` of the console.
    pub origin: String,
}

impl Browser {
    /// A browser session against the console served at `http_addr` (`host:port`).
    pub async fn start(http_addr: &str) -> Result<Browser> {
        let chromedriver = which("chromedriver").ok_or_else(|| {
            anyhow!("chromedriver not found on PATH: install Debian's chromium and chromium-driver (tests/run.sh does)")
        })?;
        let port = free_port()?;
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting chromedriver")?;
        let mut caps = serde_json::Map::new();
        let mut chrome = json!({
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                format!("--window-size={},{}", LAPTOP.0, LAPTOP.1),
            ],
        });
        if let Some(bin) = which("chromium") {
            chrome["binary"] = json!(bin);
        }
        caps.insert("goog:chromeOptions".into(), chrome);
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + PAGE_TIMEOUT;
        let client = loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => bail!("no WebDriver session from chromedriver at {url}: {e}"),
            }
        };
        client
            .issue_cmd(Cdp::new("Network.enable", json!({})))
            .await
            .map_err(|e| anyhow!("Network.enable: {e}"))?;
        Ok(Browser {
            client,
            driver,
            origin: format!("http://{http_addr}"),
        })
    }

    /// Sends `Authorization: Basic` for `user` on every request from now on (`None`: no
    /// credentials).
    pub async fn login(&self, user: Option<(&str, &str)>) -> Result<()> {
        let headers = match user {
            Some((u, p)) => {
                let creds = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                json!({"Authorization": format!("Basic {creds}")})
            }
            None => json!({}),
        };
        self.client
            .issue_cmd(Cdp::new(
                "Network.setExtraHTTPHeaders",
                json!({ "headers": headers }),
            ))
            .await
            .map_err(|e| anyhow!("setExtraHTTPHeaders: {e}"))?;
        Ok(())
    }

    /// Opens a console path and waits for the document to load.
    pub async fn open(&self, path: &str) -> Result<()> {
        self.client
            .goto(&format!("{}{path}", self.origin))
            .await
            .with_context(|| format!("opening {path}"))?;
        Ok(())
    }

    /// The current path and query (no origin).
    pub async fn path(&self) -> Result<String> {
        let url = self.client.current_url().await?;
        Ok(match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        })
    }

    /// The element matching `css`, waiting for it to appear.
    pub async fn find(&self, css: &str) -> Result<Element> {
        match self
            .client
            .wait()
            .at_most(PAGE_TIMEOUT)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => Ok(e),
            Err(e) => bail!("no element {css} on {}: {e}", self.path_or_blank().await),
        }
    }

    /// Elements matching `css` now (possibly none).
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element>> {
        Ok(self.client.find_all(Locator::Css(css)).await?)
    }

    /// The visible text of the element matching `css`. A live page may replace the element
    /// between finding and reading it (a ticket's state refreshing); that stale reference is
    /// found again, a few times at most.
    pub async fn text(&self, css: &str) -> Result<String> {
        let mut attempts = 0;
        loop {
            match self.find(css).await?.text().await {
                Ok(text) => return Ok(text),
                Err(e) if e.is_stale_element_reference() && attempts < 5 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The rows of the table matching `css` (`<tbody>` rows), each as its cells' texts.
    pub async fn table(&self, css: &str) -> Result<Vec<Vec<String>>> {
        let rows = self
            .client
            .execute(
                "const t = document.querySelector(arguments[0]);
                 if (!t) return null;
                 return Array.from(t.querySelectorAll('tbody tr')).map(
                     r => Array.from(r.cells).map(c => c.innerText.trim()));",
                vec![json!(css)],
            )
            .await?;
        serde_json::from_value::<Option<Vec<Vec<String>>>>(rows)?
            .ok_or_else(|| anyhow!("no table {css}"))
    }

    /// Fills the field `name` of the form `form` (a css selector) with `value`.
    pub async fn fill(&self, form: &str, name: &str, value: &str) -> Result<()> {
        let field = self.find(&format!("{form} [name=\"{name}\"]")).await?;
        let tag = field.tag_name().await?;
        if tag == "select" {
            field
                .select_by_value(value)
                .await
                .with_context(|| format!("option {value} of {form} {name}"))?;
        } else {
            field.clear().await?;
            field.send_keys(value).await?;
        }
        Ok(())
    }

    /// Submits `form` with its submit button (accepting a confirmation dialog if the form asks
    /// for one) and waits for the next page.
    pub async fn submit(&self, form: &str) -> Result<()> {
        let before = self.client.current_url().await?;
        self.find(&format!(
            "{form} button[type=\"submit\"], {form} button:not([type])"
        ))
        .await?
        .click()
        .await?;
        // A data-confirm form opens a confirm(): accept it.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if self.client.accept_alert().await.is_ok() {
                break;
            }
            if self.client.current_url().await.ok().as_ref() != Some(&before) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.wait_loaded().await
    }

    /// Waits for `document.readyState == "complete"`.
    pub async fn wait_loaded(&self) -> Result<()> {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        loop {
            let state = self
                .client
                .execute("return document.readyState", vec![])
                .await
                .unwrap_or(Value::Null);
            if state == json!("complete") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("page did not finish loading");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The browser console's SEVERE entries since the last call (the log is drained).
    pub async fn console_errors(&self) -> Result<Vec<String>> {
        let log = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .map_err(|e| anyhow!("reading the browser log: {e}"))?;
        Ok(log
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == json!("SEVERE"))
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect())
    }

    /// Fails if the browser logged an error since the last check.
    pub async fn assert_no_console_errors(&self, page: &str) -> Result<()> {
        let errors = self.console_errors().await?;
        if !errors.is_empty() {
            bail!("{page}: browser console errors: {errors:#?}");
        }
        Ok(())
    }

    /// Accessibility checks that need no tool: one `<h1>`, a `lang`, every form field
    /// labelled, every button and link named, every chart image described, the skip link
    /// first in the tab order. Returns what failed (empty when all pass).
    pub async fn accessibility_problems(&self) -> Result<Vec<String>> {
        let problems = self
            .client
            .execute(
                "const p = [];
                 if (document.querySelectorAll('h1').length !== 1) p.push('not exactly one h1');
                 if (!document.documentElement.lang) p.push('no lang on <html>');
                 document.querySelectorAll('input:not([type=hidden]), select, textarea').forEach(f => {
                   if (f.labels.length === 0 && !f.getAttribute('aria-label'))
                     p.push('unlabelled field ' + (f.name || f.id || f.outerHTML.slice(0, 60)));
                 });
                 // textContent, not innerText: a link inside a closed <details> renders no text yet is named.
                 document.querySelectorAll('button, a[href]').forEach(b => {
                   if (!(b.textContent || b.getAttribute('aria-label') || '').trim())
                     p.push('unnamed ' + b.outerHTML.slice(0, 60));
                 });
                 document.querySelectorAll('svg[role=img]').forEach(s => {
                   if (!s.getAttribute('aria-label')) p.push('chart without a text alternative');
                 });
                 document.querySelectorAll('table').forEach(t => {
                   if (!t.querySelector('caption') && !t.getAttribute('aria-label'))
                     p.push('table without caption');
                 });
                 const skip = document.querySelector('a.skip');
                 if (!skip || document.querySelector('a[href], button, input, select, textarea') !== skip)
                   p.push('skip link is not the first focusable element');
                 return p;",
                vec![],
            )
            .await?;
        Ok(serde_json::from_value(problems)?)
    }

    /// Does the page scroll sideways at this window size (content wider than the viewport)?
    /// Wide tables scroll inside their own box instead.
    pub async fn overflows_sideways(&self) -> Result<bool> {
        let v = self
            .client
            .execute(
                "return document.documentElement.scrollWidth > window.innerWidth + 1",
                vec![],
            )
            .await?;
        Ok(v == json!(true))
    }

    /// Saves a PNG of the window as docs/console/<name>.png when SKIFF_CONSOLE_SCREENSHOTS=1
    /// (how the README's screenshots are made); otherwise still takes it (the call must work).
    pub async fn screenshot(&self, name: &str) -> Result<()> {
        let png = self.client.screenshot().await?;
        if png.len() < 1000 {
            bail!(
                "screenshot {name} is suspiciously small ({} bytes)",
                png.len()
            );
        }
        if std::env::var("SKIFF_CONSOLE_SCREENSHOTS").as_deref() == Ok("1") {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/console");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(format!("{name}.png")), png)?;
        }
        Ok(())
    }

    /// Resizes the window (laptop or phone).
    pub async fn resize(&self, (w, h): (u32, u32)) -> Result<()> {
        self.client.set_window_size(w, h).await?;
        Ok(())
    }

    async fn path_or_blank(&self) -> String {
        self.path().await.unwrap_or_default()
    }

    /// Ends the session and chromedriver.
    pub async fn close(mut self) -> Result<()> {
        let closed = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        closed.map_err(|e| anyhow!("closing the session: {e}"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(name: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
            .map(|p| p.to_string_lossy().into_owned())
    })
}

/// chromedriver's endpoint for the browser console log (the Selenium log extension).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(r#"{"type":"browser"}"#.to_string()),
        )
    }
}

/// A DevTools protocol command through chromedriver.
#[derive(Debug)]
struct Cdp {
    body: String,
}

impl Cdp {
    fn new(cmd: &str, params: Value) -> Cdp {
        Cdp {
            body: json!({ "cmd": cmd, "params": params }).to_string(),
        }
    }
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.clone()))
    }
}
