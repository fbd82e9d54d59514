//! `redis://`, `rediss://` and `redis+sentinel://` URLs with agentstate's options.

use std::fmt;
use std::time::Duration;

use crate::RedisOptions;

/// A Redis URL: where Redis is (handed to the client as is, minus agentstate's options) and how
/// to use it. `Display` and `Debug` hide the password.
///
/// ```
/// use agentstate_redis::RedisUrl;
/// let url = RedisUrl::parse("redis://:s3cret@127.0.0.1:6379/2?prefix=test:&timeout_ms=500")?;
/// assert_eq!(url.options().prefix, "test:");
/// assert_eq!(url.to_string(), "redis://:***@127.0.0.1:6379/2?prefix=test:&timeout_ms=500");
/// # Ok::<(), agentstate_redis::RedisUrlError>(())
/// ```
#[derive(Clone)]
pub struct RedisUrl {
    url: ::url::Url,
    options: RedisOptions,
    sentinel: Option<Sentinel>,
}

/// Where the sentinels are and which master they watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sentinel {
    /// `host:port` of each sentinel.
    pub(crate) sentinels: Vec<String>,
    /// The master's name in the sentinels' configuration.
    pub(crate) master: String,
}

/// The host a sentinel URL's Redis part is parsed with (the sentinels name the real one).
const SENTINEL_HOST: &str = "sentinel.invalid";

/// Why a Redis URL was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisUrlError {
    /// Not a URL, or not a Redis one.
    #[error("{0}")]
    Malformed(String),
    /// An option is not one agentstate knows or has a bad value.
    #[error("{0}")]
    Option(String),
}

impl RedisUrl {
    /// Parses `redis://…` or `rediss://…`. Options: `prefix` (default `agentstate:`; no `{` or
    /// `}`), `timeout_ms` (per command, default 5000), `connect_timeout_ms` (default 2000),
    /// `cluster=true` (the URL names one node of a Redis Cluster). Other
    /// query parameters (`protocol`) and the fragment (`#insecure`) are the client's.
    ///
    /// `redis+sentinel://[user:password@]host:port[,host:port…]/master[/db][?…]` names Redis
    /// Sentinels (default port 26379) and the master they watch: the store asks them for the
    /// master, and asks again when it stops answering or turns read-only (a failover). The
    /// password is the master's. Options as above, plus `wait_replicas=N` (an append, create or
    /// delete is acknowledged only once `N` replicas have it: `WAIT N`, up to `wait_timeout_ms`,
    /// default 1000; fewer in time answers a retryable error, the write being on the master).
    pub fn parse(text: &str) -> Result<Self, RedisUrlError> {
        if let Some(rest) = text.strip_prefix("redis+sentinel://") {
            return Self::parse_sentinel(rest);
        }
        let mut url = ::url::Url::parse(text).map_err(|e| {
            RedisUrlError::Malformed(format!("not a URL ({e}); expected redis://host[:port][/db] or rediss://…"))
        })?;
        if !matches!(url.scheme(), "redis" | "rediss") {
            return Err(RedisUrlError::Malformed(format!(
                "the scheme is {:?}; expected redis or rediss",
                url.scheme()
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(RedisUrlError::Malformed("the URL names no host".to_owned()));
        }
        let mut options = RedisOptions::default();
        let mut kept = Vec::new();
        for (name, value) in url.query_pairs() {
            let millis = |v: &str| {
                v.parse::<u64>().ok().filter(|&ms| ms > 0).map(Duration::from_millis).ok_or_else(|| {
                    RedisUrlError::Option(format!("{name}={v}: expected a positive number of milliseconds"))
                })
            };
            match &*name {
                "prefix" => {
                    if value.contains(['{', '}']) {
                        return Err(RedisUrlError::Option(format!(
                            "prefix={value}: braces would change the Redis Cluster hash tag"
                        )));
                    }
                    options.prefix = value.into_owned();
                }
                "timeout_ms" => options.response_timeout = millis(&value)?,
                "connect_timeout_ms" => options.connection_timeout = millis(&value)?,
                "cluster" => {
                    options.cluster = match &*value {
                        "true" | "1" | "yes" => true,
                        "false" | "0" | "no" => false,
                        other => {
                            return Err(RedisUrlError::Option(format!("cluster={other}: expected true or false")));
                        }
                    }
                }
                "wait_replicas" => {
                    options.wait_replicas = value.parse().map_err(|_| {
                        RedisUrlError::Option(format!("wait_replicas={value}: expected a whole number of replicas"))
                    })?;
                }
                "wait_timeout_ms" => options.wait_timeout = millis(&value)?,
                "protocol" => kept.push((name.into_owned(), value.into_owned())),
                other => {
                    return Err(RedisUrlError::Option(format!(
                        "unknown option {other:?}; known: prefix, timeout_ms, connect_timeout_ms, cluster, \
                         wait_replicas, wait_timeout_ms, protocol"
                    )));
                }
            }
        }
        if options.cluster && options.wait_replicas > 0 {
            return Err(RedisUrlError::Option(
                "wait_replicas is for one master with replicas (redis:// or redis+sentinel://), not a cluster"
                    .to_owned(),
            ));
        }
        url.set_query(None);
        if !kept.is_empty() {
            url.query_pairs_mut().extend_pairs(kept);
        }
        Ok(Self { url, options, sentinel: None })
    }

    /// The part of a `redis+sentinel://` URL after the scheme.
    fn parse_sentinel(rest: &str) -> Result<Self, RedisUrlError> {
        let malformed = |why: &str| {
            RedisUrlError::Malformed(format!(
                "{why}; expected redis+sentinel://[user:password@]host:port[,host:port…]/master[/db]"
            ))
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
            None => (String::new(), authority),
        };
        let mut sentinels = Vec::new();
        for host in hosts.split(',') {
            if host.is_empty() {
                return Err(malformed("a sentinel address is empty"));
            }
            let has_port = host.rsplit_once(':').is_some_and(|(_, p)| !p.contains(']'));
            let address = if has_port { host.to_owned() } else { format!("{host}:26379") };
            if let Some((_, port)) = address.rsplit_once(':')
                && port.parse::<u16>().is_err()
            {
                return Err(malformed(&format!("the port of sentinel {host:?} is not a number")));
            }
            sentinels.push(address);
        }
        let (path, query) = match tail.find(['?', '#']) {
            Some(i) => tail.split_at(i),
            None => (tail, ""),
        };
        let mut parts = path.trim_start_matches('/').splitn(2, '/');
        let master = parts.next().filter(|m| !m.is_empty()).ok_or_else(|| malformed("the URL names no master"))?;
        let db = parts.next().filter(|d| !d.is_empty()).unwrap_or("0");
        if db.parse::<u32>().is_err() {
            return Err(malformed(&format!("the database {db:?} is not a number")));
        }
        let mut parsed = Self::parse(&format!("redis://{userinfo}{SENTINEL_HOST}/{db}{query}"))?;
        if parsed.options.cluster {
            return Err(RedisUrlError::Option("cluster=true: sentinels watch one master, not a cluster".to_owned()));
        }
        parsed.sentinel = Some(Sentinel { sentinels, master: master.to_owned() });
        Ok(parsed)
    }

    /// The sentinels, for a `redis+sentinel://` URL.
    pub(crate) fn sentinel(&self) -> Option<&Sentinel> {
        self.sentinel.as_ref()
    }

    /// The URL with `prefix` instead of the one it has.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.options.prefix = prefix.into();
        self
    }

    /// The options.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// The URL the client connects to (it holds the password: never log it).
    pub(crate) fn connection_url(&self) -> &str {
        self.url.as_str()
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some("***"));
        }
        shown.set_query(None);
        let options = &self.options;
        let mut query = format!("prefix={}", options.prefix);
        let defaults = RedisOptions::default();
        if options.response_timeout != defaults.response_timeout {
            query.push_str(&format!("&timeout_ms={}", options.response_timeout.as_millis()));
        }
        if options.connection_timeout != defaults.connection_timeout {
            query.push_str(&format!("&connect_timeout_ms={}", options.connection_timeout.as_millis()));
        }
        if options.cluster {
            query.push_str("&cluster=true");
        }
        if options.wait_replicas > 0 {
            query.push_str(&format!("&wait_replicas={}", options.wait_replicas));
            if options.wait_timeout != defaults.wait_timeout {
                query.push_str(&format!("&wait_timeout_ms={}", options.wait_timeout.as_millis()));
            }
        }
        let text = match &self.sentinel {
            Some(sentinel) => {
                let db = shown.path().trim_start_matches('/');
                let (before, after) = shown.as_str().split_once(SENTINEL_HOST).unwrap_or((shown.as_str(), ""));
                let after = after.strip_prefix(&format!("/{db}")).unwrap_or(after);
                let before = before.replacen("redis://", "redis+sentinel://", 1);
                format!("{before}{}/{}/{db}{after}", sentinel.sentinels.join(","), sentinel.master)
            }
            None => shown.as_str().to_owned(),
        };
        match text.split_once('#') {
            Some((before, fragment)) => write!(f, "{before}?{query}#{fragment}"),
            None => write!(f, "{text}?{query}"),
        }
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_and_secrets_hidden() {
        let url = RedisUrl::parse("rediss://user:pw@example.com:6380/3?timeout_ms=250&protocol=resp3").unwrap();
        assert_eq!(url.options().prefix, "agentstate:");
        assert_eq!(url.options().response_timeout, Duration::from_millis(250));
        assert_eq!(url.connection_url(), "rediss://user:pw@example.com:6380/3?protocol=resp3");
        let shown = format!("{url} {url:?}");
        assert!(!shown.contains("pw"), "{shown}");
        assert!(shown.contains("user:***@example.com"), "{shown}");
    }

    #[test]
    fn sentinel_urls_are_read_and_shown_without_the_password() {
        let url =
            RedisUrl::parse("redis+sentinel://:pw@127.0.0.1:26379,h2/mymaster/3?prefix=p:&wait_replicas=1").unwrap();
        let sentinel = url.sentinel().unwrap();
        assert_eq!(sentinel.sentinels, ["127.0.0.1:26379", "h2:26379"]);
        assert_eq!(sentinel.master, "mymaster");
        assert_eq!(url.options().wait_replicas, 1);
        assert_eq!(url.connection_url(), "redis://:pw@sentinel.invalid/3");
        assert_eq!(
            url.to_string(),
            "redis+sentinel://:***@127.0.0.1:26379,h2:26379/mymaster/3?prefix=p:&wait_replicas=1"
        );
        let plain = RedisUrl::parse("redis+sentinel://s1:5000/m").unwrap();
        assert_eq!(plain.to_string(), "redis+sentinel://s1:5000/m/0?prefix=agentstate:");
    }

    #[test]
    fn bad_urls_say_why() {
        for (url, says) in [
            ("http://x", "scheme"),
            ("redis://x?prefix={a}", "hash tag"),
            ("redis://x?timeout_ms=0", "positive"),
            ("redis://x?pool=3", "unknown option"),
            ("nonsense", "not a URL"),
            ("redis+sentinel://a:1,,b:2/m", "empty"),
            ("redis+sentinel://a:1", "no master"),
            ("redis+sentinel://a:x/m", "not a number"),
            ("redis+sentinel://a:1/m/zero", "not a number"),
            ("redis+sentinel://a:1/m?cluster=true", "one master"),
            ("redis://x?cluster=true&wait_replicas=1", "not a cluster"),
            ("redis://x?wait_replicas=some", "whole number"),
        ] {
            let error = RedisUrl::parse(url).unwrap_err().to_string();
            assert!(error.contains(says), "{url}: {error}");
        }
    }
}
