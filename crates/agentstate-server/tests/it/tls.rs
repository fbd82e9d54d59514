//! TLS on the one address: Google's Python client over gRPC and REST with a bearer token sees
//! what it sees in cleartext; ALPN offers `h2` and `http/1.1`; cleartext gets no answer; the
//! certificate is read again when its files change; mutual TLS refuses a client without a
//! certificate; RSA and ECDSA keys; bad files refused at start with the file named.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agentstate_server::{Tls, TlsFiles};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const TOKEN: &str = "tls-client-token-0123456789";
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/go_scenario.py");

/// A CA of the test's own, and a directory for the files it signs.
struct Pki {
    dir: PathBuf,
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Pki {
        let dir = std::env::temp_dir().join("agentstate-tests").join(format!("tls-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Names of their own: a leaf whose issuer is named as it is looks self-signed to OpenSSL.
        params.distinguished_name.push(DnType::CommonName, format!("agentstate test CA {}", dir.display()));
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        Pki { dir, ca }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A certificate for 127.0.0.1 and localhost signed by the CA, on `key`: (cert PEM, key PEM).
    fn leaf(&self, key: &KeyPair) -> (String, String) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        (params.signed_by(key, &self.ca).unwrap().pem(), key.serialize_pem())
    }

    /// Writes a leaf on a new P-256 key as `name.pem` and `name.key`; the DER of its certificate.
    fn write_leaf(&self, name: &str) -> (TlsFiles, Vec<u8>) {
        self.write_leaf_on(name, &KeyPair::generate().unwrap())
    }

    fn write_leaf_on(&self, name: &str, key: &KeyPair) -> (TlsFiles, Vec<u8>) {
        let (cert, key) = self.leaf(key);
        let files = TlsFiles {
            cert: self.path(&format!("{name}.pem")),
            key: self.path(&format!("{name}.key")),
            client_ca: None,
        };
        std::fs::write(&files.cert, &cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        (files, der(&cert))
    }
}

fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
}

/// Serves on a fresh SQLite database over TLS; the address.
fn serve_tls(files: &TlsFiles, tokens: Option<&str>) -> SocketAddr {
    let tokens = tokens.map(|json| agentstate_server::Tokens::parse(json).unwrap());
    crate::vertex::serve_on(tokens, Some(Tls::load(files).unwrap()))
}

/// A TLS handshake as a rustls client trusting the CA in `ca` and offering `alpn`: the
/// protocol chosen and the server's certificate.
async fn handshake(address: SocketAddr, ca: &Path, alpn: &[&[u8]]) -> (Option<Vec<u8>>, Vec<u8>) {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(address).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let stream = TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();
    let connection = stream.get_ref().1;
    let certificate = connection.peer_certificates().unwrap()[0].to_vec();
    (connection.alpn_protocol().map(<[u8]>::to_vec), certificate)
}

/// An HTTPS client trusting the test's CA, with a client certificate if given.
fn https(pki: &Pki, identity: Option<(String, String)>) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(pki.path("ca.pem")).unwrap()).unwrap();
    let mut builder = reqwest::Client::builder().tls_certs_only([ca]);
    if let Some((cert, key)) = identity {
        builder = builder.identity(reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

fn scenario(address: &str, transport: &str, engine: &str, ca: &Path) -> Value {
    let out = Command::new(agentstate_conformance::reference::adk_python())
        .arg(SCRIPT)
        .args([address, transport, engine, TOKEN])
        .env("AGENTSTATE_TEST_CA", ca)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{transport} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googles_client_over_tls_with_a_token_sees_what_it_sees_in_cleartext() {
    let pki = Pki::new();
    let (files, _) = pki.write_leaf("server");
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["301", "302", "303"]}}]}}"#);
    let secure = serve_tls(&files, Some(&tokens)).to_string();
    let cleartext = crate::vertex::serve(Some(&tokens)).trim_start_matches("http://").to_owned();
    let ca = pki.path("ca.pem");
    let runs = tokio::task::spawn_blocking(move || {
        [
            scenario(&cleartext, "grpc", "301", &ca),
            scenario(&secure, "grpcs", "302", &ca),
            scenario(&secure, "rests", "303", &ca),
        ]
    })
    .await
    .unwrap();
    let [plain, grpcs, rests] = &runs;
    for (step, expected) in plain.as_object().unwrap() {
        if !step.starts_with('_') {
            assert_eq!(&grpcs[step], expected, "step {step}: gRPC over TLS (left) vs cleartext");
        }
    }
    for (step, theirs) in rests.as_object().unwrap() {
        if !step.starts_with('_') {
            assert_eq!(&grpcs[step], theirs, "step {step}: gRPC over TLS (left) vs REST over TLS");
        }
    }
    assert_eq!(grpcs["concurrent_user_keys"].as_array().unwrap().len(), 16);
    assert_eq!(grpcs["no_token"]["error"], 401, "{}", grpcs["no_token"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpn_picks_h2_when_offered_and_cleartext_gets_no_answer() {
    let pki = Pki::new();
    let (files, _) = pki.write_leaf("server");
    let address = serve_tls(&files, None);
    let ca = pki.path("ca.pem");
    assert_eq!(handshake(address, &ca, &[b"h2", b"http/1.1"]).await.0.as_deref(), Some(&b"h2"[..]));
    assert_eq!(handshake(address, &ca, &[b"http/1.1"]).await.0.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!(handshake(address, &ca, &[]).await.0, None);

    let client = https(&pki, None);
    let url = format!("https://{address}/apps/a/users/u/sessions");
    let created = client.post(&url).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(created.status(), 200);
    let listed: Value = client.get(&url).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Cleartext HTTP/1.1 and HTTP/2 (as cleartext gRPC speaks it): no answer at all.
    let cleartext = format!("http://{address}/apps/a/users/u/sessions");
    assert!(reqwest::get(&cleartext).await.is_err(), "a cleartext request was answered");
    let h2c = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    assert!(h2c.get(&cleartext).send().await.is_err(), "a cleartext HTTP/2 request was answered");
    // The server still serves after them.
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_is_read_again_when_its_files_change() {
    let pki = Pki::new();
    let (files, first) = pki.write_leaf("server");
    let address = serve_tls(&files, None);
    let ca = pki.path("ca.pem");
    assert_eq!(handshake(address, &ca, &[]).await.1, first);
    // A rotation that writes the certificate before its key: until the key is there, the pair
    // does not match and the previous certificate is served.
    let key = KeyPair::generate().unwrap();
    let (cert, key_pem) = pki.leaf(&key);
    std::fs::write(&files.cert, &cert).unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(handshake(address, &ca, &[]).await.1, first, "a certificate without its key was served");
    std::fs::write(&files.key, key_pem).unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let mut seen = handshake(address, &ca, &[]).await.1;
    if seen == first {
        // The change landed just after a check; the next one sees it.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        seen = handshake(address, &ca, &[]).await.1;
    }
    assert_eq!(seen, der(&cert), "the new certificate is served without a restart");
    // Files that do not load leave the last good certificate in place.
    std::fs::write(&files.cert, "not a certificate").unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(handshake(address, &ca, &[]).await.1, der(&cert));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_a_client_without_a_certificate_of_its_ca() {
    let pki = Pki::new();
    let (mut files, _) = pki.write_leaf("server");
    files.client_ca = Some(pki.path("ca.pem"));
    let address = serve_tls(&files, None);
    let url = format!("https://{address}/apps/a/users/u/sessions");

    assert!(https(&pki, None).get(&url).send().await.is_err(), "a client without a certificate was answered");
    let stranger = Pki::new();
    let foreign = stranger.leaf(&KeyPair::generate().unwrap());
    assert!(https(&pki, Some(foreign)).get(&url).send().await.is_err(), "a certificate of another CA was accepted");
    let known = pki.leaf(&KeyPair::generate().unwrap());
    assert_eq!(https(&pki, Some(known)).get(&url).send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rsa_key_serves_as_an_ecdsa_key_does() {
    let pki = Pki::new();
    let rsa = KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048).unwrap();
    assert!(rsa.serialize_pem().starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8");
    let (files, certificate) = pki.write_leaf_on("rsa", &rsa);
    let address = serve_tls(&files, None);
    assert_eq!(handshake(address, &pki.path("ca.pem"), &[b"h2"]).await.1, certificate);
    let url = format!("https://{address}/apps/a/users/u/sessions");
    assert_eq!(https(&pki, None).get(&url).send().await.unwrap().status(), 200);
}

/// `agentstate serve` with these options: its exit status and what it wrote to stderr.
fn serve_refused(args: &[&str]) -> (bool, String) {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}/refused.db", dir.display());
    let out = Command::new(env!("CARGO_BIN_EXE_agentstate"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db", &db])
        .args(args)
        .env_remove("AGENTSTATE_TLS_CERT")
        .env_remove("AGENTSTATE_TLS_KEY")
        .env_remove("AGENTSTATE_TLS_CLIENT_CA")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_tls_files_are_refused_at_start_naming_the_file() {
    let pki = Pki::new();
    let (files, _) = pki.write_leaf("server");
    let (cert, key) = (files.cert.to_str().unwrap(), files.key.to_str().unwrap());
    let not_pem = pki.path("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let not_pem = not_pem.to_str().unwrap();

    let (ok, stderr) = serve_refused(&["--tls-cert", not_pem, "--tls-key", key]);
    assert!(!ok && stderr.contains(not_pem) && stderr.contains("no PEM certificate"), "{stderr}");
    let (ok, stderr) = serve_refused(&["--tls-cert", cert, "--tls-key", not_pem]);
    assert!(!ok && stderr.contains(not_pem), "{stderr}");
    let missing = pki.path("missing.pem");
    let (ok, stderr) = serve_refused(&["--tls-cert", missing.to_str().unwrap(), "--tls-key", key]);
    assert!(!ok && stderr.contains("missing.pem"), "{stderr}");
    let (other, _) = pki.write_leaf("other");
    let (ok, stderr) = serve_refused(&["--tls-cert", cert, "--tls-key", other.key.to_str().unwrap()]);
    assert!(!ok && stderr.to_lowercase().contains("key"), "a key of another certificate: {stderr}");
    assert!(!stderr.contains("BEGIN PRIVATE KEY"), "key material in an error: {stderr}");
    let (ok, stderr) = serve_refused(&["--tls-key", key]);
    assert!(!ok && stderr.contains("--tls-cert"), "{stderr}");
    let (ok, stderr) = serve_refused(&["--tls-cert", cert, "--tls-key", key, "--tls-client-ca", not_pem]);
    assert!(!ok && stderr.contains(not_pem), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_engine_client_crate_reaches_a_tls_server_with_a_ca_file() {
    use agentstate::{CreateSession, GetSessionConfig, SessionKey, SessionService};
    use agentstate_vertex::{Builder, Credentials};
    let pki = Pki::new();
    let (files, _) = pki.write_leaf("server");
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["401"]}}]}}"#);
    let address = serve_tls(&files, Some(&tokens));
    let ca = pki.path("ca.pem");
    let url = format!("agentengine://401?endpoint=https://{address}&ca_file={}", ca.display());
    let store = Builder::from_url(&url).unwrap().credentials(Credentials::Bearer(TOKEN.into())).build().unwrap();
    let service = SessionService::new(store);
    let created = service.create_session(CreateSession::new("401", "u")).await.unwrap();
    let key = SessionKey::new("401", "u", created.id()).unwrap();
    assert!(service.get_session(&key, GetSessionConfig::default()).await.unwrap().is_some());

    // Without the CA the server's certificate is not trusted; a file that is no bundle is named.
    let untrusted = Builder::default()
        .endpoint(format!("https://{address}"))
        .credentials(Credentials::Bearer(TOKEN.into()))
        .build()
        .unwrap();
    assert!(SessionService::new(untrusted).create_session(CreateSession::new("401", "u")).await.is_err());
    let not_pem = pki.path("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let refused = Builder::default().endpoint(format!("https://{address}")).ca_file(&not_pem).build().unwrap_err();
    assert!(refused.to_string().contains("not.pem"), "{refused}");
}

/// `--db rediss://`: the store reaches a Redis serving TLS (rustls; the CA from `SSL_CERT_FILE`,
/// which the system's trust store loader reads), and refuses one it cannot trust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_on_tls_is_reached_over_rustls() {
    let pki = Pki::new();
    let (files, _) = pki.write_leaf("redis");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let redis = std::process::Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .arg("--dir")
        .arg(pki.path(""))
        .arg("--tls-cert-file")
        .arg(&files.cert)
        .arg("--tls-key-file")
        .arg(&files.key)
        .arg("--tls-ca-cert-file")
        .arg(pki.path("ca.pem"))
        .args(["--tls-auth-clients", "no"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-server (Debian's, built with TLS)");
    let _redis = crate::binary::Running(redis);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "redis-server did not listen on its TLS port");
        std::thread::sleep(Duration::from_millis(20));
    }
    let db = format!("rediss://127.0.0.1:{port}/0?prefix=tls-{}:", agentstate::Event::new_id());
    let ca = pki.path("ca.pem");
    let (child, addr) = crate::binary::serve_with_env(
        &["--db", &db, "--addr", "127.0.0.1:0"],
        &[("SSL_CERT_FILE", ca.to_str().unwrap())],
    );
    let _server = crate::binary::Running(child);
    let http = reqwest::Client::new();
    let created = http.post(format!("http://{addr}/apps/a/users/u/sessions/s1")).json(&serde_json::json!({"k": 1}));
    assert_eq!(created.send().await.unwrap().status(), 200);
    let read: Value =
        http.get(format!("http://{addr}/apps/a/users/u/sessions/s1")).send().await.unwrap().json().await.unwrap();
    assert_eq!(read["state"]["k"], 1);

    // Without the CA, the server's certificate is refused at start, with the URL and no password.
    let out = Command::new(env!("CARGO_BIN_EXE_agentstate"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db", &db])
        .env("SSL_CERT_FILE", pki.path("missing.pem"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}
