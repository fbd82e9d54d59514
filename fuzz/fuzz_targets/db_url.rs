//! Database URLs (SQL and Redis): parsing never panics, and a password given in the URL never
//! shows in what the parsed URL prints (Display or Debug) or in the error.
#![no_main]

use agentstate_redis::RedisUrl;
use agentstate_sql::DatabaseUrl;
use libfuzzer_sys::fuzz_target;

/// The password part of `scheme://user:password@host…`, when it is long enough to look for.
/// A SQLite URL has no password: all after its scheme is a file path, shown as given (in
/// `sqlite:/a://u:p@h` the file is `/a://u:p@h`).
fn password(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let base = scheme.split('+').next().unwrap_or(scheme);
    if scheme.contains(':') || base.eq_ignore_ascii_case("sqlite") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let password = userinfo.split_once(':')?.1;
    // Short or repeated passwords could appear elsewhere in the URL by chance.
    (password.len() >= 6 && url.matches(password).count() == 1).then_some(password)
}

/// Everything a parse shows of `url`: what it prints, or its error.
fn shown(url: &str) -> String {
    let sql = match DatabaseUrl::parse(url) {
        Ok(parsed) => format!("{parsed} {parsed:?}"),
        Err(e) => e.to_string(),
    };
    let redis = match RedisUrl::parse(url) {
        Ok(parsed) => format!("{parsed} {parsed:?}"),
        Err(e) => e.to_string(),
    };
    format!("{sql}\n{redis}")
}

fuzz_target!(|url: &str| {
    let text = shown(url);
    if let Some(password) = password(url)
        && text.contains(password)
    {
        // Shown text may hold the same characters by chance (a fixed message that says
        // "rediss"): it is a leak only if it goes away with the password.
        let other = url.replacen(password, &"\u{1}".repeat(password.chars().count()), 1);
        assert!(shown(&other).contains(password), "{url:?} shows its password in {text:?}");
    }
});
