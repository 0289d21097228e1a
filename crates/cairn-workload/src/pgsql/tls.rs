//! TLS for the native PostgreSQL client (`connect "tls"`): rustls on ring through
//! tokio-rustls, verifying the server's certificate against the run's CA (the target's
//! `tls_ca`) and the name or address the client connects to, as tokio-postgres's
//! `MakeTlsConnect`.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// Makes a TLS connector per connection, trusting only one CA.
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for MakeRustls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MakeRustls")
    }
}

impl MakeRustls {
    /// A connector trusting the CA certificates in the PEM file `ca`.
    pub fn from_ca_file(ca: &Path) -> Result<MakeRustls, String> {
        let pem = std::fs::read(ca)
            .map_err(|e| format!("cannot read the CA certificate {}: {e}", ca.display()))?;
        Self::from_ca_pem(&pem).map_err(|e| format!("{}: {e}", ca.display()))
    }

    /// A connector trusting the CA certificates in `pem`.
    pub fn from_ca_pem(pem: &[u8]) -> Result<MakeRustls, String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            let cert = cert.map_err(|e| format!("not a PEM certificate: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("not a CA certificate: {e}"))?;
        }
        if roots.is_empty() {
            return Err("holds no certificate".into());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS configuration: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(MakeRustls {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = PgTlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_string()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{domain:?} is not a name a certificate can hold: {e}"),
            )
        })?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One connection's TLS handshake, for the server `name`.
pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = PgTlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<PgTlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            connector
                .connect(self.name, stream)
                .await
                .map(|s| PgTlsStream(Box::new(s)))
        })
    }
}

/// A TLS stream to the server.
pub struct PgTlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for PgTlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for PgTlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for PgTlsStream<S> {
    /// No channel binding: cairn's roles log in without a password (`trust`), so there is no
    /// SCRAM exchange to bind.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::{TcpListener, TcpStream};

    /// A TLS server on 127.0.0.1 with `material`'s certificate, accepting handshakes.
    async fn tls_server(
        material: &cairn_exec::docker::container::tls::TlsMaterial,
    ) -> std::net::SocketAddr {
        let certs = rustls_pemfile::certs(&mut material.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pemfile::private_key(&mut material.key_pem.as_bytes())
            .unwrap()
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = acceptor.accept(s).await;
                });
            }
        });
        addr
    }

    /// A handshake with the server at `addr`, named `name`, trusting `ca_pem`.
    async fn handshake(addr: std::net::SocketAddr, name: &str, ca_pem: &str) -> io::Result<()> {
        let mut make = MakeRustls::from_ca_pem(ca_pem.as_bytes()).unwrap();
        let connect = <MakeRustls as MakeTlsConnect<TcpStream>>::make_tls_connect(&mut make, name)?;
        let stream = TcpStream::connect(addr).await?;
        connect.connect(stream).await.map(|_| ())
    }

    /// Real handshakes over loopback: the server's certificate is accepted only when the
    /// trusted CA signed it and it names the address the client connects to.
    #[test]
    fn the_handshake_verifies_the_ca_and_the_address() {
        use cairn_exec::docker::container::tls::generate;
        let run = generate("run", &["127.0.0.1".into(), "localhost".into()]).unwrap();
        let other = generate("other", &["127.0.0.1".into()]).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let addr = tls_server(&run).await;
            handshake(addr, "127.0.0.1", &run.ca_pem).await.unwrap();
            handshake(addr, "localhost", &run.ca_pem).await.unwrap();
            let e = handshake(addr, "127.0.0.1", &other.ca_pem)
                .await
                .unwrap_err();
            assert!(e.to_string().contains("UnknownIssuer"), "{e}");
            let e = handshake(addr, "10.9.9.9", &run.ca_pem).await.unwrap_err();
            assert!(e.to_string().contains("not valid for name"), "{e}");
        });
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let e = MakeRustls::from_ca_pem(b"").unwrap_err();
        assert!(e.contains("no certificate"), "{e}");
        let e = MakeRustls::from_ca_file(Path::new("/nonexistent/ca.pem")).unwrap_err();
        assert!(
            e.contains("cannot read the CA certificate /nonexistent/ca.pem"),
            "{e}"
        );
        let mut m = MakeRustls {
            config: Arc::new(
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
            ),
        };
        let c = <MakeRustls as MakeTlsConnect<tokio::net::TcpStream>>::make_tls_connect(
            &mut m, "10.0.0.2",
        );
        assert!(c.is_ok());
        let c = <MakeRustls as MakeTlsConnect<tokio::net::TcpStream>>::make_tls_connect(
            &mut m,
            "not a name",
        );
        assert!(c.is_err());
    }
}
