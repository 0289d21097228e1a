//! What a Debian archive serves now: the package versions in a suite's index
//! (`dists/<suite>/main/binary-<arch>/Packages.gz`), so a lock can be checked against the
//! mirror before a base image is built (`cairn plan`, the image step).
//!
//! The index is fetched over plain HTTP (Debian mirrors serve it so). The suite's
//! `InRelease` names the index's SHA-256 (its signature is not checked here: debootstrap
//! checks what it installs); the index is kept in the cache under that digest and checked
//! against it, so a later check downloads only the small `InRelease` until the archive
//! publishes a new index. A mirror that cannot be reached is an error that names the address.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// Package → every version the index lists for it.
pub type ArchiveVersions = BTreeMap<String, Vec<String>>;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The versions `mirror` serves for `suite`/`arch` (component `main`), through the cached
/// copy under `cache` while the suite's release file names the same index.
pub fn archive_versions(
    mirror: &str,
    suite: &str,
    arch: &str,
    cache: &Path,
) -> Result<ArchiveVersions, String> {
    let base = format!("{}/dists/{suite}", mirror.trim_end_matches('/'));
    let release_url = format!("{base}/InRelease");
    let release = String::from_utf8_lossy(&get(&release_url, 3)?).into_owned();
    let index = format!("main/binary-{arch}/Packages.gz");
    let sha = index_sha256(&release, &index)
        .ok_or_else(|| format!("{release_url} lists no SHA256 of {index}"))?;
    let file = cache.join("archive").join(format!("{sha}.gz"));
    let gz = match std::fs::read(&file) {
        Ok(b) if sha256_hex(&b) == sha => b,
        _ => {
            let url = format!("{base}/{index}");
            let b = get(&url, 3)?;
            if sha256_hex(&b) != sha {
                return Err(format!(
                    "{url} does not have the SHA-256 that {release_url} names (a mirror mid-update? try again)"
                ));
            }
            // best effort: without the copy the next check downloads again
            let _ = std::fs::create_dir_all(file.parent().expect("has a parent"));
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, &b).is_ok() {
                let _ = std::fs::rename(&tmp, &file);
            }
            b
        }
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .map_err(|e| format!("{base}/{index}: not a gzip'd package index: {e}"))?;
    Ok(parse_index(&text))
}

/// The SHA-256 a release file lists for `path` (its `SHA256:` section).
fn index_sha256(release: &str, path: &str) -> Option<String> {
    let mut in_sha256 = false;
    for line in release.lines() {
        if !line.starts_with(' ') {
            in_sha256 = line.trim_end() == "SHA256:";
            continue;
        }
        let mut f = line.split_whitespace();
        if let (true, Some(sum), Some(_size), Some(p)) = (in_sha256, f.next(), f.next(), f.next()) {
            if p == path {
                return Some(sum.to_ascii_lowercase());
            }
        }
    }
    None
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `Package:`/`Version:` pairs of a Debian package index.
pub fn parse_index(text: &str) -> ArchiveVersions {
    let mut out = ArchiveVersions::new();
    let mut package: Option<&str> = None;
    for line in text.lines() {
        if line.is_empty() {
            package = None;
        } else if let Some(p) = line.strip_prefix("Package: ") {
            package = Some(p.trim());
        } else if let (Some(v), Some(p)) = (line.strip_prefix("Version: "), package) {
            let versions = out.entry(p.to_string()).or_default();
            if !versions.iter().any(|x| x == v.trim()) {
                versions.push(v.trim().to_string());
            }
        }
    }
    out
}

/// An HTTP/1.1 GET on a connection the server closes at the end (`Connection: close`;
/// mirrors and their proxies refuse HTTP/1.0), following up to `redirects` redirections.
fn get(url: &str, redirects: u32) -> Result<Vec<u8>, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        format!("{url}: only http:// mirrors can be checked against a lock (the index is fetched without TLS)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| format!("{url}: cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{url}: {authority} has no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)
        .map_err(|e| format!("{url}: cannot connect to {authority}: {e}"))?;
    s.set_read_timeout(Some(TIMEOUT)).ok();
    s.set_write_timeout(Some(TIMEOUT)).ok();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: cairn\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("{url}: {e}"))?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)
        .map_err(|e| format!("{url}: {e}"))?;
    let code: u16 = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{url}: not an HTTP answer: {:?}", status.trim()))?;
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| format!("{url}: {e}"))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    match code {
        200 => {
            let mut body = Vec::new();
            let chunked = headers
                .get("transfer-encoding")
                .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
            if chunked {
                read_chunked(&mut r, &mut body)
                    .map_err(|e| format!("{url}: reading the body: {e}"))?;
            } else {
                r.read_to_end(&mut body)
                    .map_err(|e| format!("{url}: reading the body: {e}"))?;
            }
            if let Some(len) = headers
                .get("content-length")
                .and_then(|l| l.parse::<usize>().ok())
            {
                if body.len() != len {
                    return Err(format!(
                        "{url}: the answer ended after {} of {len} bytes",
                        body.len()
                    ));
                }
            }
            Ok(body)
        }
        301 | 302 | 303 | 307 | 308 if redirects > 0 => {
            let to = headers
                .get("location")
                .ok_or_else(|| format!("{url}: redirect ({code}) without a location"))?;
            get(to, redirects - 1)
        }
        _ => Err(format!("{url}: the mirror answered {}", status.trim())),
    }
}

/// A chunked body (RFC 9112 §7.1): hex size lines, each chunk and its CRLF, up to the
/// zero-size chunk.
fn read_chunked(r: &mut impl BufRead, body: &mut Vec<u8>) -> Result<(), String> {
    loop {
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| e.to_string())?;
        let size = line.trim().split(';').next().unwrap_or_default();
        let n = usize::from_str_radix(size, 16)
            .map_err(|_| format!("a bad chunk size line {:?}", line.trim()))?;
        if n == 0 {
            return Ok(());
        }
        let start = body.len();
        body.resize(start + n, 0);
        r.read_exact(&mut body[start..])
            .map_err(|e| format!("a chunk ended early: {e}"))?;
        let mut crlf = [0u8; 2];
        r.read_exact(&mut crlf).map_err(|e| e.to_string())?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_lists_every_version_of_each_package() {
        let text = "Package: less\nVersion: 590-2\nArchitecture: amd64\n\nPackage: libc6\nSource: glibc\nVersion: 2.36-9\n\nPackage: less\nVersion: 590-2.1\n\n";
        let v = parse_index(text);
        assert_eq!(v["less"], ["590-2", "590-2.1"]);
        assert_eq!(v["libc6"], ["2.36-9"]);
    }

    /// A one-shot HTTP server on loopback answering each connection with `answers` in turn.
    fn serve(answers: Vec<Vec<u8>>) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let mut requests = Vec::new();
            for a in answers {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).unwrap();
                requests.push(String::from_utf8_lossy(&buf[..n]).to_string());
                s.write_all(&a).unwrap();
            }
            requests
        });
        (format!("http://{addr}"), h)
    }

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    fn ok(body: &[u8]) -> Vec<u8> {
        let mut a =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        a.extend_from_slice(body);
        a
    }

    fn release(index: &[u8]) -> Vec<u8> {
        let text = format!(
            "Origin: Debian\nMD5Sum:\n 00 1 main/binary-amd64/Packages.gz\nSHA256:\n {} {} main/binary-amd64/Packages.gz\n {} 9 main/binary-i386/Packages.gz\n",
            sha256_hex(index),
            index.len(),
            "ab".repeat(32)
        );
        ok(text.as_bytes())
    }

    #[test]
    fn the_index_is_fetched_once_then_taken_from_the_cache_while_the_release_names_it() {
        let index = gz("Package: less\nVersion: 590-2\n");
        let (mirror, server) = serve(vec![release(&index), ok(&index), release(&index)]);
        let cache = tempfile::tempdir().unwrap();
        let first = archive_versions(&mirror, "bookworm", "amd64", cache.path()).unwrap();
        let second = archive_versions(&mirror, "bookworm", "amd64", cache.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(first["less"], ["590-2"]);
        let requests = server.join().unwrap();
        assert!(requests[0].starts_with("GET /dists/bookworm/InRelease HTTP/1.1"));
        assert!(
            requests[1].starts_with("GET /dists/bookworm/main/binary-amd64/Packages.gz HTTP/1.1")
        );
        assert!(
            requests[2].starts_with("GET /dists/bookworm/InRelease"),
            "{requests:?}"
        );
    }

    #[test]
    fn a_chunked_answer_is_put_together() {
        let index = gz("Package: less\nVersion: 590-2\n");
        let (a, b) = index.split_at(10);
        let mut answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in [a, b] {
            answer.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            answer.extend_from_slice(part);
            answer.extend_from_slice(b"\r\n");
        }
        answer.extend_from_slice(b"0\r\n\r\n");
        let (mirror, server) = serve(vec![release(&index), answer]);
        let cache = tempfile::tempdir().unwrap();
        let v = archive_versions(&mirror, "bookworm", "amd64", cache.path()).unwrap();
        assert_eq!(v["less"], ["590-2"]);
        server.join().unwrap();
    }

    #[test]
    fn a_missing_index_a_cut_or_altered_answer_is_an_error_naming_the_address() {
        let index = gz("Package: less\nVersion: 590-2\n");
        let (mirror, server) = serve(vec![
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
            release(&index),
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".to_vec(),
            release(&index),
            ok(&gz("Package: less\nVersion: 1-evil\n")),
        ]);
        let cache = tempfile::tempdir().unwrap();
        let e = archive_versions(&mirror, "nosuch", "amd64", cache.path()).unwrap_err();
        assert!(
            e.contains("dists/nosuch/InRelease") && e.contains("404"),
            "{e}"
        );
        let e = archive_versions(&mirror, "cut", "amd64", cache.path()).unwrap_err();
        assert!(e.contains("after 5 of 100 bytes"), "{e}");
        let e = archive_versions(&mirror, "bookworm", "amd64", cache.path()).unwrap_err();
        assert!(e.contains("does not have the SHA-256"), "{e}");
        server.join().unwrap();
        let e =
            archive_versions("https://example.org/debian", "x", "amd64", cache.path()).unwrap_err();
        assert!(e.contains("only http://"), "{e}");
    }

    #[test]
    fn the_release_names_the_index_of_one_architecture() {
        let r = "SHA256:\n aa 1 main/binary-amd64/Packages.gz\n bb 2 main/binary-i386/Packages.gz\nOther:\n cc 3 main/binary-arm64/Packages.gz\n";
        assert_eq!(
            index_sha256(r, "main/binary-i386/Packages.gz").as_deref(),
            Some("bb")
        );
        assert_eq!(index_sha256(r, "main/binary-arm64/Packages.gz"), None);
    }
}
