//! Image manifests: the installed Debian packages of an image with versions, plus its id and architecture, for provenance.

use crate::docker::{Docker, DockerError, Result};

/// One installed package, as `dpkg-query` reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct InstalledPackage {
    pub package: String,
    pub version: String,
    pub architecture: String,
}

/// What an image is: id, architecture and installed packages (sorted by name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageManifest {
    /// `sha256:…`: the engine's id, machine-local (debootstrap makes another on every
    /// build of the same packages), so it is left out of a serialised manifest when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_id: String,
    /// The engine's view (`amd64`, `386`, …).
    pub image_architecture: Option<String>,
    /// `dpkg --print-architecture` inside the image (`amd64`, `i386`, …).
    pub dpkg_architecture: String,
    pub packages: Vec<InstalledPackage>,
}

impl ImageManifest {
    /// The version of an installed package.
    pub fn version_of(&self, package: &str) -> Option<&str> {
        self.packages
            .iter()
            .find(|p| p.package == package)
            .map(|p| p.version.as_str())
    }
}

const SCRIPT: &str = "dpkg --print-architecture && echo --- && dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\n'";

impl Docker {
    /// Read the manifest of `image` by running `dpkg-query` in a throwaway container (no network).
    pub fn manifest(&self, image: &str) -> Result<ImageManifest> {
        let inspect = self
            .block_on(self.inner.api.inspect_image(image))
            .map_err(DockerError::api(format!("inspect image {image}")))?;
        let cmd = ["/bin/sh", "-c", SCRIPT];
        let out = self.run_once(image, &cmd)?.check(&cmd, image)?;
        let (arch, list) = out
            .stdout
            .split_once("---\n")
            .ok_or_else(|| DockerError::Invalid(format!("unexpected dpkg output from {image}")))?;
        Ok(ImageManifest {
            image_id: inspect.id.unwrap_or_default(),
            image_architecture: inspect.architecture,
            dpkg_architecture: arch.trim().to_string(),
            packages: parse_dpkg_query(list),
        })
    }
}

/// Parse `Package\tVersion\tArchitecture` lines (sorted, duplicates removed).
pub fn parse_dpkg_query(text: &str) -> Vec<InstalledPackage> {
    let mut v: Vec<InstalledPackage> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (p, ver, a) = (f.next()?, f.next()?, f.next()?);
            // not-installed (config-files only) packages have an empty version
            (!p.is_empty() && !ver.is_empty()).then(|| InstalledPackage {
                package: p.to_string(),
                version: ver.to_string(),
                architecture: a.to_string(),
            })
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dpkg_lines() {
        let t = "zlib1g\t1:1.2.13.dfsg-1\tamd64\nmariadb-server\t1:10.11.11-0+deb12u1\tamd64\nrc-only\t\t\nbad line\n";
        let p = parse_dpkg_query(t);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].package, "mariadb-server");
        let m = ImageManifest {
            image_id: "sha256:x".into(),
            image_architecture: Some("amd64".into()),
            dpkg_architecture: "amd64".into(),
            packages: p,
        };
        assert_eq!(m.version_of("zlib1g"), Some("1:1.2.13.dfsg-1"));
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<ImageManifest>(&json).unwrap(), m);
    }
}
