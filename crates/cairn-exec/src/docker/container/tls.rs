//! TLS material for `connect "tls"` servers: a fresh CA and a server certificate per server start (rcgen), and the `my.cnf` lines that use them.
//!
//! The CA is made anew for every start and never leaves the run: its certificate is written
//! next to the socket on the host (for clients) and uploaded, with the server's certificate
//! and key, into the container at [`CONTAINER_TLS_DIR`]. The server certificate names the
//! container's address, its network alias / hostname, `localhost` and `127.0.0.1`, so a
//! client that verifies the server certificate (`--ssl-verify-server-cert`) accepts it by any
//! of those names. A client certificate signed by the same CA is made too, for clients that
//! insist on presenting one (sysbench 1.0's `--mysql-ssl=on` loads `client-key.pem`,
//! `client-cert.pem` and `cacert.pem` from its working directory); the server does not
//! require it.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::docker::{DockerError, Result};

/// Where the certificates are uploaded inside the container.
pub const CONTAINER_TLS_DIR: &str = "/etc/cairn/tls";
/// The file the start script waits for before it starts the server (uploaded last).
pub const TLS_READY_MARKER: &str = "ready";
/// The CA certificate's file name (inside [`CONTAINER_TLS_DIR`], and beside the socket on the host).
pub const CA_FILE: &str = "ca.pem";
/// The server certificate's file name inside [`CONTAINER_TLS_DIR`].
pub const CERT_FILE: &str = "server-cert.pem";
/// The server key's file name inside [`CONTAINER_TLS_DIR`].
pub const KEY_FILE: &str = "server-key.pem";
/// The directory, beside the socket on the host, holding the client files under the names
/// sysbench 1.0 reads: [`CLIENT_CA_FILE`], [`CLIENT_CERT_FILE`], [`CLIENT_KEY_FILE`].
pub const CLIENT_DIR: &str = "client-tls";
pub const CLIENT_CA_FILE: &str = "cacert.pem";
pub const CLIENT_CERT_FILE: &str = "client-cert.pem";
pub const CLIENT_KEY_FILE: &str = "client-key.pem";

/// A CA certificate, and a server and a client certificate signed by it, PEM-encoded.
#[derive(Clone)]
pub struct TlsMaterial {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca_pem", &self.ca_pem)
            .field("cert_pem", &self.cert_pem)
            .field("client_cert_pem", &self.client_cert_pem)
            .finish_non_exhaustive()
    }
}

fn tls_err(what: &str) -> impl FnOnce(rcgen::Error) -> DockerError + '_ {
    move |e| DockerError::Invalid(format!("TLS: {what}: {e}"))
}

/// Make a CA (common name `cairn CA <label>`), a server certificate for `names` (DNS names
/// or IP addresses) and a client certificate (common name `cairn client`), both signed by it.
pub fn generate(label: &str, names: &[String]) -> Result<TlsMaterial> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls_err("CA parameters"))?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::CommonName, format!("cairn CA {label}"));
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(tls_err("CA key"))?;
    let ca_cert = ca.self_signed(&ca_key).map_err(tls_err("sign the CA"))?;
    let issuer = Issuer::new(ca, ca_key);

    let mut names: Vec<String> = names.to_vec();
    names.dedup();
    let first = names.first().cloned().unwrap_or_else(|| "localhost".into());
    let mut leaf = CertificateParams::new(names).map_err(tls_err("server certificate names"))?;
    leaf.distinguished_name = rcgen::DistinguishedName::new();
    leaf.distinguished_name.push(DnType::CommonName, first);
    leaf.use_authority_key_identifier_extension = true;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().map_err(tls_err("server key"))?;
    let cert = leaf
        .signed_by(&key, &issuer)
        .map_err(tls_err("sign the server certificate"))?;

    let mut client =
        CertificateParams::new(Vec::<String>::new()).map_err(tls_err("client certificate"))?;
    client.distinguished_name = rcgen::DistinguishedName::new();
    client
        .distinguished_name
        .push(DnType::CommonName, "cairn client");
    client.use_authority_key_identifier_extension = true;
    client.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate().map_err(tls_err("client key"))?;
    let client_cert = client
        .signed_by(&client_key, &issuer)
        .map_err(tls_err("sign the client certificate"))?;
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        client_cert_pem: client_cert.pem(),
        client_key_pem: client_key.serialize_pem(),
    })
}

/// Where the server sees its TLS files (the system writes them into its configuration).
pub fn container_tls_files() -> crate::system::TlsFiles {
    crate::system::TlsFiles {
        ca: format!("{CONTAINER_TLS_DIR}/{CA_FILE}"),
        cert: format!("{CONTAINER_TLS_DIR}/{CERT_FILE}"),
        key: format!("{CONTAINER_TLS_DIR}/{KEY_FILE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_pem_material() {
        let m = generate("t", &["s1".into(), "172.18.0.2".into(), "localhost".into()]).unwrap();
        assert!(m.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(m.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(m.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_ne!(m.ca_pem, m.cert_pem);
        assert!(m.client_cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_ne!(m.client_cert_pem, m.cert_pem);
        assert_ne!(m.client_key_pem, m.key_pem);
        // fresh every time
        let again = generate("t", &["s1".into()]).unwrap();
        assert_ne!(again.ca_pem, m.ca_pem);
        assert!(!format!("{m:?}").contains("PRIVATE"));
        assert_eq!(container_tls_files().key, "/etc/cairn/tls/server-key.pem");
    }
}
