//! How the results files name paths: as a reader can reproduce them, never as absolute
//! directories of the machine the run happened on. A path inside the checkout is shown relative
//! to it; a cargo build output (`…/release/X`, `…/debug/X`) as `target/<profile>/X`, whatever
//! `CARGO_TARGET_DIR` was; one under `$HOME` as `$HOME/…`; anything else by its file name
//! (binaries such as `tansu` are then found on the PATH).
//!
//! Pure functions; no I/O.

use std::path::{Path, PathBuf};

/// The checkout and home directory that paths are shown relative to.
pub struct Shown {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
}

impl Shown {
    /// For this process: the workspace root and `$HOME`.
    pub fn here(workspace: &Path) -> Shown {
        Shown {
            workspace: workspace.to_path_buf(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute() && h != Path::new("/")),
        }
    }

    /// One path as a results file shows it.
    pub fn path(&self, p: &Path) -> String {
        if !p.is_absolute() {
            return p.display().to_string();
        }
        if let Ok(rest) = p.strip_prefix(&self.workspace) {
            return if rest.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rest.display().to_string()
            };
        }
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let profile = p
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        if let (Some(name), Some(profile)) = (&name, &profile) {
            if profile == "release" || profile == "debug" {
                return format!("target/{profile}/{name}");
            }
        }
        if let Some(rest) = self.home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
            return format!("$HOME/{}", rest.display());
        }
        name.unwrap_or_else(|| p.display().to_string())
    }

    /// A command line as a results file shows it: every absolute path argument (also the
    /// value of `--flag=/path`) through [`Shown::path`].
    pub fn command(&self, args: impl IntoIterator<Item = String>) -> String {
        args.into_iter()
            .map(|a| match a.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") && value.starts_with('/') => {
                    format!("{flag}={}", self.path(Path::new(value)))
                }
                _ if a.starts_with('/') => self.path(Path::new(&a)),
                _ => a,
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown() -> Shown {
        Shown {
            workspace: PathBuf::from("/srv/wt-x"),
            home: Some(PathBuf::from("/home/ann")),
        }
    }

    #[test]
    fn no_absolute_machine_directories() {
        let s = shown();
        let cmd = [
            "/srv/target-bench2/release/skiff-bench",
            "compare",
            "--broker-bin",
            "/srv/target-bench2/release/skiff",
            "--tansu-bin",
            "/srv/tools/tansu/bin/tansu",
            "--out",
            "/srv/wt-x/crates/skiff-bench/results",
            "--kafka-dir=/home/ann/kafka/4.4",
            "--runs",
            "3",
        ]
        .map(String::from);
        assert_eq!(
            s.command(cmd),
            "target/release/skiff-bench compare --broker-bin target/release/skiff \
             --tansu-bin tansu --out crates/skiff-bench/results \
             --kafka-dir=$HOME/kafka/4.4 --runs 3"
        );
        assert_eq!(s.path(Path::new("/srv/wt-x")), ".");
        assert_eq!(s.path(Path::new("rel/x")), "rel/x");
        assert_eq!(
            s.path(Path::new("/srv/wt-x/target/debug/skiff")),
            "target/debug/skiff"
        );
    }
}
