//! `redis://` and `rediss://` URLs with agentstate's options.

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
}

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
    pub fn parse(text: &str) -> Result<Self, RedisUrlError> {
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
                "protocol" => kept.push((name.into_owned(), value.into_owned())),
                other => {
                    return Err(RedisUrlError::Option(format!(
                        "unknown option {other:?}; known: prefix, timeout_ms, connect_timeout_ms, cluster, protocol"
                    )));
                }
            }
        }
        url.set_query(None);
        if !kept.is_empty() {
            url.query_pairs_mut().extend_pairs(kept);
        }
        Ok(Self { url, options })
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
        let text = shown.as_str();
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
    fn bad_urls_say_why() {
        for (url, says) in [
            ("http://x", "scheme"),
            ("redis://x?prefix={a}", "hash tag"),
            ("redis://x?timeout_ms=0", "positive"),
            ("redis://x?pool=3", "unknown option"),
            ("nonsense", "not a URL"),
        ] {
            let error = RedisUrl::parse(url).unwrap_err().to_string();
            assert!(error.contains(says), "{url}: {error}");
        }
    }
}
