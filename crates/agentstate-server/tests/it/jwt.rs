//! JWTs of an OpenID provider as bearer tokens, against a JWKS server the test starts: valid
//! RS256, ES256 and EdDSA tokens grant their apps and their user on REST, the Agent Engine surface and
//! gRPC; expired, not yet valid, wrong issuer or audience, unknown key, `alg: none`, HS256 signed
//! with the public key, malformed and oversized tokens are refused; a rotated key is fetched, a
//! flood of unknown keys fetches the set once a period; static tokens keep working beside them.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
use agentstate_server::{Jwt, JwtConfig, Tokens};
use api::session_service_client::SessionServiceClient;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tonic::Code;

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "agentstate-tests";
const STATIC: &str = "static-token-0123456789abcdef";
const APP: &str = "5150";

/// A signing key of the test's provider.
struct Signer {
    kid: String,
    algorithm: Algorithm,
    key: EncodingKey,
    jwk: Jwk,
}

impl Signer {
    fn rsa(kid: &str) -> Signer {
        let pair = rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048).unwrap();
        Signer::of(kid, Algorithm::RS256, EncodingKey::from_rsa_pem(pair.serialize_pem().as_bytes()).unwrap())
    }

    fn ec(kid: &str) -> Signer {
        let pair = rcgen::KeyPair::generate().unwrap();
        Signer::of(kid, Algorithm::ES256, EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap())
    }

    fn ed(kid: &str) -> Signer {
        use rcgen::PublicKeyData as _;
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        // rcgen writes PKCS#8 v2 (with the public key), which jsonwebtoken's JWK maker does not
        // take apart: the JWK from the public key itself.
        let x = URL_SAFE_NO_PAD.encode(pair.der_bytes());
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA"});
        let key = EncodingKey::from_ed_der(&pair.serialize_der());
        Signer { kid: kid.to_owned(), algorithm: Algorithm::EdDSA, key, jwk: serde_json::from_value(jwk).unwrap() }
    }

    fn of(kid: &str, algorithm: Algorithm, key: EncodingKey) -> Signer {
        let mut jwk = Jwk::from_encoding_key(&key, algorithm).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        Signer { kid: kid.to_owned(), algorithm, key, jwk }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn now() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

/// Claims of a token for `user` of [`APP`], valid for an hour.
fn claims(user: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": user, "apps": [APP], "iat": now(), "exp": now() + 3600})
}

/// The provider's key set, served over HTTP on loopback; it counts the fetches.
struct Provider {
    url: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
}

impl Provider {
    async fn start(keys: Vec<Jwk>) -> Provider {
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (Arc::clone(&keys), Arc::clone(&fetches));
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (keys, fetches) = (Arc::clone(&served), Arc::clone(&counted));
                async move {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    axum::Json(JwkSet { keys: keys.lock().unwrap().clone() })
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Provider { url, keys, fetches }
    }
}

/// A server accepting the provider's JWTs and one static admin token.
fn serve(provider: &Provider) -> SocketAddr {
    let config = JwtConfig {
        issuer: Some(ISSUER.to_owned()),
        audience: Some(AUDIENCE.to_owned()),
        refetch_every: Duration::from_millis(500),
        ..JwtConfig::new(provider.url.clone())
    };
    let static_tokens = format!(r#"{{"tokens": [{{"token": "{STATIC}", "apps": "*", "admin": true}}]}}"#);
    let tokens = Tokens::parse(&static_tokens).unwrap().with_jwt(Jwt::new(config).unwrap());
    crate::vertex::serve_on(Some(tokens), None)
}

/// `POST /apps/APP/users/USER/sessions` with `token`: the status and the challenge, if any.
async fn create(address: SocketAddr, user: &str, token: &str) -> (u16, Option<String>) {
    let response = reqwest::Client::new()
        .post(format!("http://{address}/apps/{APP}/users/{user}/sessions"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

async fn refused(address: SocketAddr, token: &str, why: &str) {
    let (status, challenge) = create(address, "alice", token).await;
    assert_eq!(status, 401, "{why}");
    assert_eq!(challenge.as_deref(), Some(r#"Bearer error="invalid_token""#), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_tokens_grant_their_apps_and_their_user_and_the_rest_are_refused() {
    let (rsa, ec, ed) = (Signer::rsa("rsa-1"), Signer::ec("ec-1"), Signer::ed("ed-1"));
    let provider = Provider::start(vec![rsa.jwk.clone(), ec.jwk.clone(), ed.jwk.clone()]).await;
    let address = serve(&provider);

    assert_eq!(create(address, "alice", &rsa.sign(&claims("alice"))).await.0, 200, "RS256");
    assert_eq!(create(address, "alice", &ec.sign(&claims("alice"))).await.0, 200, "ES256");
    assert_eq!(create(address, "alice", &ed.sign(&claims("alice"))).await.0, 200, "EdDSA");
    assert_eq!(create(address, "bob", &rsa.sign(&claims("alice"))).await.0, 403, "another user's sessions");
    let mut other_app = claims("alice");
    other_app["apps"] = json!(["6160"]);
    assert_eq!(create(address, "alice", &rsa.sign(&other_app)).await.0, 403, "another app");
    let mut listed_audience = claims("alice");
    listed_audience["aud"] = json!(["someone-else", AUDIENCE]);
    assert_eq!(create(address, "alice", &rsa.sign(&listed_audience)).await.0, 200, "aud as a list");
    let mut admin = claims("ops");
    admin["agentstate_admin"] = json!(true);
    admin["apps"] = json!("*");
    assert_eq!(create(address, "bob", &ec.sign(&admin)).await.0, 200, "an admin's token covers every user");
    assert_eq!(create(address, "bob", STATIC).await.0, 200, "a static token beside JWTs");

    let mut expired = claims("alice");
    expired["exp"] = json!(now() - 120);
    refused(address, &rsa.sign(&expired), "expired").await;
    let mut early = claims("alice");
    early["nbf"] = json!(now() + 120);
    refused(address, &rsa.sign(&early), "not yet valid").await;
    let mut issuer = claims("alice");
    issuer["iss"] = json!("https://elsewhere.example");
    refused(address, &rsa.sign(&issuer), "wrong issuer").await;
    let mut audience = claims("alice");
    audience["aud"] = json!("someone-else");
    refused(address, &rsa.sign(&audience), "wrong audience").await;
    refused(address, &Signer::rsa("rsa-1").sign(&claims("alice")), "a key the set does not hold, same kid").await;
    refused(address, &Signer::ec("stranger").sign(&claims("alice")), "an unknown kid").await;

    let encode = |value: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap());
    let none =
        format!("{}.{}.", encode(&json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"})), encode(&claims("alice")));
    refused(address, &none, "alg none").await;
    // HS256 keyed with the RSA public key's JWK text: the classic confusion of key kinds.
    let public = serde_json::to_vec(&rsa.jwk).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rsa-1".into());
    let hmac = jsonwebtoken::encode(&header, &claims("alice"), &EncodingKey::from_secret(&public)).unwrap();
    refused(address, &hmac, "HS256 with the public key").await;
    refused(address, "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln", "malformed").await;
    let (status, _) = create(address, "alice", "").await;
    assert_eq!(status, 401, "no token");

    // A megabyte of token: refused (by the header limit or the JWT check), never a crash.
    let huge = format!("eyJ{}.e30.sig", "A".repeat(1 << 20));
    let sent = reqwest::Client::new()
        .post(format!("http://{address}/apps/{APP}/users/alice/sessions"))
        .bearer_auth(huge)
        .json(&json!({}))
        .send()
        .await;
    assert!(sent.is_err() || matches!(sent.unwrap().status().as_u16(), 401 | 431), "a 1 MB JWT");
    assert_eq!(create(address, "alice", &rsa.sign(&claims("alice"))).await.0, 200, "still serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_and_a_flood_of_unknown_keys_fetches_once_a_period() {
    let old = Signer::rsa("old");
    let provider = Provider::start(vec![old.jwk.clone()]).await;
    let address = serve(&provider);
    assert_eq!(create(address, "alice", &old.sign(&claims("alice"))).await.0, 200);
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 1, "fetched once, then cached");
    for _ in 0..5 {
        assert_eq!(create(address, "alice", &old.sign(&claims("alice"))).await.0, 200);
    }
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 1, "not fetched per request");

    // The provider rotates: a token of the new key is accepted once the set is fetched again.
    let new = Signer::ec("new");
    provider.keys.lock().unwrap().push(new.jwk.clone());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(create(address, "alice", &new.sign(&claims("alice"))).await.0, 200, "the rotated key");
    let after_rotation = provider.fetches.load(Ordering::SeqCst);
    assert_eq!(after_rotation, 2);

    // Fifty tokens naming keys nobody has, at once: at most one fetch a period (500 ms here).
    let stranger = Signer::ec("stranger");
    let flood: Vec<_> = (0..50)
        .map(|i| {
            let mut header = Header::new(Algorithm::ES256);
            header.kid = Some(format!("unknown-{i}"));
            jsonwebtoken::encode(&header, &claims("alice"), &stranger.key).unwrap()
        })
        .collect();
    let started = std::time::Instant::now();
    let answers = futures_util::future::join_all(flood.iter().map(|token| create(address, "alice", token))).await;
    let periods = started.elapsed().as_millis() / 500 + 1;
    assert!(answers.iter().all(|(status, _)| *status == 401));
    let fetched = provider.fetches.load(Ordering::SeqCst) - after_rotation;
    assert!(fetched as u128 <= periods, "{fetched} fetches for 50 unknown keys in {periods} periods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_engine_surface_and_grpc_take_the_same_tokens() {
    let signer = Signer::rsa("rsa-1");
    let provider = Provider::start(vec![signer.jwk.clone()]).await;
    let address = serve(&provider);
    let alice = signer.sign(&claims("alice"));
    let http = reqwest::Client::new();
    let sessions = format!("http://{address}/v1beta1/reasoningEngines/{APP}/sessions");
    let own = http.post(&sessions).bearer_auth(&alice).json(&json!({"userId": "alice"})).send().await.unwrap();
    assert_eq!(own.status(), 200);
    let other = http.post(&sessions).bearer_auth(&alice).json(&json!({"userId": "bob"})).send().await.unwrap();
    assert_eq!(other.status(), 403);
    let expired = {
        let mut c = claims("alice");
        c["exp"] = json!(now() - 120);
        signer.sign(&c)
    };
    let refused = http.post(&sessions).bearer_auth(&expired).json(&json!({"userId": "alice"})).send().await.unwrap();
    assert_eq!(refused.status(), 401);

    let channel = tonic::transport::Channel::from_shared(format!("http://{address}")).unwrap().connect().await.unwrap();
    let mut client = SessionServiceClient::new(channel);
    let request = |user: &str, token: &str| {
        let mut request = tonic::Request::new(api::CreateSessionRequest {
            parent: format!("reasoningEngines/{APP}"),
            session: Some(api::Session { user_id: user.into(), ..Default::default() }),
            session_id: String::new(),
        });
        request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        request
    };
    assert!(client.create_session(request("alice", &alice)).await.is_ok(), "a JWT in gRPC metadata, cleartext");
    let denied = client.create_session(request("bob", &alice)).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);
    let unauthenticated = client.create_session(request("alice", &expired)).await.unwrap_err();
    assert_eq!(unauthenticated.code(), Code::Unauthenticated);
}

#[test]
fn a_jwks_url_over_cleartext_off_loopback_is_refused() {
    for url in ["http://idp.example/jwks", "ftp://127.0.0.1/jwks", "not a url"] {
        assert!(Jwt::new(JwtConfig::new(url)).is_err(), "{url}");
    }
    for url in ["https://idp.example/jwks", "http://127.0.0.1:9/jwks", "http://localhost/jwks", "http://[::1]/jwks"] {
        assert!(Jwt::new(JwtConfig::new(url)).is_ok(), "{url}");
    }
}
