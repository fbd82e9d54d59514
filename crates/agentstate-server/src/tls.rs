//! TLS on the server's one address (rustls, with the *ring* provider): HTTPS and gRPC over TLS,
//! `h2` and `http/1.1` offered by ALPN, the certificate and key re-read when their files change
//! (rotation without a restart), and, when a client CA is given, client certificates required
//! (mutual TLS).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// How often a handshake looks whether the certificate or key file changed.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Where the server's TLS material is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM: the leaf certificate, then its chain if any.
    pub cert: PathBuf,
    /// PEM: the private key (PKCS#8; PKCS#1 RSA and SEC1 EC keys are read too).
    pub key: PathBuf,
    /// PEM: the CAs whose certificates clients must present (mutual TLS); none asks for none.
    pub client_ca: Option<PathBuf>,
}

/// What was wrong with the TLS files. Names paths, never key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read, holds no PEM of the kind expected, or (the client CA) is refused
    /// as a trust anchor.
    #[error("{path}: {what}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// rustls refused the material (a key that does not match the certificate, say).
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

fn file_error(path: &Path, what: impl fmt::Display) -> TlsError {
    TlsError::File { path: path.to_owned(), what: what.to_string() }
}

/// The TLS side of the server: accepts a connection's handshake.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the files (an error names the file and what is wrong) and builds the configuration.
    pub fn load(files: &TlsFiles) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certificate = Reloading::new(files, Arc::clone(&provider))?;
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)?;
        let builder = match &files.client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for certificate in certificates(path)? {
                    roots.add(certificate).map_err(|e| file_error(path, e))?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| file_error(path, e))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(Arc::new(certificate));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self { acceptor: TlsAcceptor::from(Arc::new(config)) })
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}

/// Every certificate of a PEM file; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if chain.is_empty() {
        return Err(file_error(path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(chain)
}

fn certified_key(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
    Ok(Arc::new(CertifiedKey::from_der(chain, key, provider)?))
}

/// What a file looked like when it was read: its modification time and length.
type Stamp = [Option<(SystemTime, u64)>; 2];

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let of = |path: &Path| std::fs::metadata(path).ok().and_then(|m| Some((m.modified().ok()?, m.len())));
    [of(cert), of(key)]
}

/// The server's certificate, read again when its files change: a handshake at most once a
/// [`CHECK_EVERY`] looks at the files' times and lengths, and a changed pair that loads (a
/// certificate and the key it was made for) replaces the one served. A pair that does not load,
/// such as a certificate written before its key, leaves the previous one in place until it does.
struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<Current>,
}

struct Current {
    key: Arc<CertifiedKey>,
    stamp: Stamp,
    checked: Instant,
    /// The files as they were when they last failed to load (said once, not at every check).
    refused: Option<Stamp>,
}

impl Reloading {
    fn new(files: &TlsFiles, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let stamp = stamp(&files.cert, &files.key);
        let key = certified_key(&files.cert, &files.key, &provider)?;
        let current = Mutex::new(Current { key, stamp, checked: Instant::now(), refused: None });
        Ok(Self { cert: files.cert.clone(), key: files.key.clone(), provider, current })
    }
}

impl fmt::Debug for Reloading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloading").field("cert", &self.cert).field("key", &self.key).finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.checked.elapsed() >= CHECK_EVERY {
            current.checked = Instant::now();
            let seen = stamp(&self.cert, &self.key);
            if seen != current.stamp && current.refused != Some(seen) {
                match certified_key(&self.cert, &self.key, &self.provider) {
                    Ok(key) => {
                        *current = Current { key, stamp: seen, checked: Instant::now(), refused: None };
                        tracing::info!(cert = %self.cert.display(), "TLS certificate reloaded");
                    }
                    Err(e) => {
                        current.refused = Some(seen);
                        tracing::warn!(error = %e, "the TLS files changed but do not load; serving the previous certificate");
                    }
                }
            }
        }
        Some(Arc::clone(&current.key))
    }
}
