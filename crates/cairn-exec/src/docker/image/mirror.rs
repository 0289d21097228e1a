//! Finding the Debian mirror for debootstrap: an explicit option, `$CAIRN_DEBIAN_MIRROR`, or the host's apt configuration.
//!
//! The mirror is never hard-coded. Order of precedence:
//! 1. an explicit value given by the caller,
//! 2. the environment variable [`MIRROR_ENV`],
//! 3. the host's apt sources: `/etc/apt/sources.list.d/*.sources` (deb822, `URIs:`),
//!    then `/etc/apt/sources.list` and `/etc/apt/sources.list.d/*.list` (one-line `deb` entries).
//!
//! Among apt entries, the first enabled `deb` (binary) entry that serves a plain suite
//! (e.g. `bookworm`, not `bookworm-security` / `bookworm-updates`) wins; if there is none,
//! the first enabled `deb` entry at all.

use std::path::{Path, PathBuf};

use crate::docker::DockerError;

/// Environment variable that overrides the mirror found in the apt configuration.
pub const MIRROR_ENV: &str = "CAIRN_DEBIAN_MIRROR";

/// One binary (`deb`) source found in an apt configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    /// The archive URI, e.g. `http://deb.debian.org/debian`.
    pub uri: String,
    /// The suites listed with it, e.g. `["bookworm", "bookworm-updates"]`.
    pub suites: Vec<String>,
    /// The file it came from.
    pub file: PathBuf,
}

impl AptSource {
    /// True if one of the suites is a plain release (no `-security`, `-updates`, `-backports` …, no `/updates`).
    pub fn serves_plain_suite(&self) -> bool {
        self.suites
            .iter()
            .any(|s| !s.contains('-') && !s.contains('/'))
    }
}

/// Where the mirror came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MirrorOrigin {
    /// Given by the caller.
    Explicit,
    /// From the environment variable [`MIRROR_ENV`].
    Env,
    /// From this apt configuration file.
    Apt(PathBuf),
}

/// A resolved mirror URL with its origin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mirror {
    pub url: String,
    pub origin: MirrorOrigin,
}

/// Resolve the mirror: `explicit`, else `$CAIRN_DEBIAN_MIRROR`, else the host's apt configuration under `/`.
pub fn resolve_mirror(explicit: Option<&str>) -> Result<Mirror, DockerError> {
    let env = std::env::var(MIRROR_ENV).ok();
    resolve_mirror_in(explicit, env.as_deref(), Path::new("/"))
}

/// Like [`resolve_mirror`], but with the environment value and the filesystem root given (for tests).
pub fn resolve_mirror_in(
    explicit: Option<&str>,
    env: Option<&str>,
    root: &Path,
) -> Result<Mirror, DockerError> {
    if let Some(url) = explicit.map(str::trim).filter(|u| !u.is_empty()) {
        return Ok(Mirror {
            url: url.to_string(),
            origin: MirrorOrigin::Explicit,
        });
    }
    if let Some(url) = env.map(str::trim).filter(|u| !u.is_empty()) {
        return Ok(Mirror {
            url: url.to_string(),
            origin: MirrorOrigin::Env,
        });
    }
    let sources = apt_sources(root);
    let chosen = sources
        .iter()
        .find(|s| s.serves_plain_suite())
        .or_else(|| sources.first())
        .ok_or_else(|| {
            DockerError::NoMirror(format!(
                "no enabled `deb` source in {}etc/apt/sources.list(.d); set ${MIRROR_ENV}",
                root.display()
            ))
        })?;
    Ok(Mirror {
        url: chosen.uri.clone(),
        origin: MirrorOrigin::Apt(chosen.file.clone()),
    })
}

/// All binary sources in the apt configuration under `root`, in the order apt-style tools
/// would meet them: `*.sources` files (sorted), `sources.list`, then `*.list` files (sorted).
pub fn apt_sources(root: &Path) -> Vec<AptSource> {
    let apt = root.join("etc/apt");
    let dir = apt.join("sources.list.d");
    let mut listed: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    listed.sort();
    let mut out = Vec::new();
    for p in listed
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sources"))
    {
        if let Ok(text) = std::fs::read_to_string(p) {
            out.extend(parse_deb822(&text, p));
        }
    }
    let main = apt.join("sources.list");
    if let Ok(text) = std::fs::read_to_string(&main) {
        out.extend(parse_one_line(&text, &main));
    }
    for p in listed
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "list"))
    {
        if let Ok(text) = std::fs::read_to_string(p) {
            out.extend(parse_one_line(&text, p));
        }
    }
    out
}

/// Parse a deb822 `.sources` file: paragraphs separated by blank lines, `Types:`, `URIs:`,
/// `Suites:`, `Enabled:` fields; `#` comment lines; continuation lines start with white space.
pub fn parse_deb822(text: &str, file: &Path) -> Vec<AptSource> {
    let mut out = Vec::new();
    let mut fields: Vec<(String, String)> = Vec::new();
    let flush = |fields: &mut Vec<(String, String)>, out: &mut Vec<AptSource>| {
        let get = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let types = get("Types").unwrap_or("");
        let enabled = get("Enabled").is_none_or(|v| !v.trim().eq_ignore_ascii_case("no"));
        if enabled && types.split_whitespace().any(|t| t == "deb") {
            let suites: Vec<String> = get("Suites")
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect();
            for uri in get("URIs")
                .unwrap_or("")
                .split_whitespace()
                .filter(|u| usable_uri(u))
            {
                out.push(AptSource {
                    uri: uri.trim_end_matches('/').to_string(),
                    suites: suites.clone(),
                    file: file.to_path_buf(),
                });
            }
        }
        fields.clear();
    };
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            flush(&mut fields, &mut out);
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = fields.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            fields.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    flush(&mut fields, &mut out);
    out
}

/// Parse one-line-style entries: `deb [options] URI suite [component…]`.
pub fn parse_one_line(text: &str, file: &Path) -> Vec<AptSource> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("deb") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue; // `deb-src`
        }
        let mut rest = rest.trim_start();
        if rest.starts_with('[') {
            match rest.find(']') {
                Some(end) => rest = rest[end + 1..].trim_start(),
                None => continue,
            }
        }
        let mut words = rest.split_whitespace();
        let (Some(uri), Some(suite)) = (words.next(), words.next()) else {
            continue;
        };
        if usable_uri(uri) {
            out.push(AptSource {
                uri: uri.trim_end_matches('/').to_string(),
                suites: vec![suite.to_string()],
                file: file.to_path_buf(),
            });
        }
    }
    out
}

/// debootstrap can fetch from http(s), ftp and file URIs (not `cdrom:`, `mirror+…`, `tor+…`).
fn usable_uri(uri: &str) -> bool {
    ["http://", "https://", "ftp://", "file:/"]
        .iter()
        .any(|p| uri.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_SOURCES: &str = "\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn deb822_like_this_host() {
        let s = parse_deb822(HOST_SOURCES, Path::new("debian.sources"));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].uri, "http://deb.debian.org/debian");
        assert_eq!(s[0].suites, ["bookworm", "bookworm-updates"]);
        assert!(s[0].serves_plain_suite());
        assert_eq!(s[1].uri, "http://deb.debian.org/debian-security");
        assert!(!s[1].serves_plain_suite());
    }

    #[test]
    fn deb822_skips_disabled_src_and_handles_multiple_uris() {
        let text = "\
Types: deb-src
URIs: http://src.example/debian
Suites: trixie

Types: deb
Enabled: no
URIs: http://off.example/debian
Suites: trixie

Types: deb deb-src
URIs: http://a.example/debian/ https://b.example/debian
  cdrom:/media/x
Suites: trixie
";
        let s = parse_deb822(text, Path::new("x.sources"));
        let uris: Vec<_> = s.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["http://a.example/debian", "https://b.example/debian"]
        );
    }

    #[test]
    fn one_line_format() {
        let text = "\
# a comment
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://security.example/debian-security bookworm-security main
deb http://mirror.example/debian/ bookworm main contrib # trailing comment
deb cdrom:[Debian]/ bookworm main
";
        let s = parse_one_line(text, Path::new("sources.list"));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].uri, "http://security.example/debian-security");
        assert_eq!(s[1].uri, "http://mirror.example/debian");
        assert_eq!(s[1].suites, ["bookworm"]);
    }

    #[test]
    fn resolve_prefers_explicit_then_env_then_plain_suite() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "etc/apt/sources.list",
            "deb http://security.example/debian-security bookworm-security main\n",
        );
        write(
            dir.path(),
            "etc/apt/sources.list.d/debian.sources",
            HOST_SOURCES,
        );
        let m = resolve_mirror_in(
            Some("http://explicit/debian"),
            Some("http://env/debian"),
            dir.path(),
        )
        .unwrap();
        assert_eq!(m.origin, MirrorOrigin::Explicit);
        let m = resolve_mirror_in(None, Some("http://env/debian"), dir.path()).unwrap();
        assert_eq!(
            (m.url.as_str(), m.origin),
            ("http://env/debian", MirrorOrigin::Env)
        );
        let m = resolve_mirror_in(None, Some("  "), dir.path()).unwrap();
        assert_eq!(m.url, "http://deb.debian.org/debian");
        assert!(matches!(m.origin, MirrorOrigin::Apt(p) if p.ends_with("debian.sources")));
    }

    #[test]
    fn resolve_from_sources_list_only_and_fallback_to_any_deb() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "etc/apt/sources.list",
            "deb http://security.example/debian-security bookworm-security main\n\
             deb http://mirror.example/debian bookworm main\n",
        );
        let m = resolve_mirror_in(None, None, dir.path()).unwrap();
        assert_eq!(m.url, "http://mirror.example/debian");

        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "etc/apt/sources.list.d/sec.list",
            "deb http://security.example/debian-security bookworm-security main\n",
        );
        let m = resolve_mirror_in(None, None, dir.path()).unwrap();
        assert_eq!(m.url, "http://security.example/debian-security");
    }

    #[test]
    fn resolve_without_any_source_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_mirror_in(None, None, dir.path()).unwrap_err();
        assert!(err.to_string().contains(MIRROR_ENV), "{err}");
    }
}
