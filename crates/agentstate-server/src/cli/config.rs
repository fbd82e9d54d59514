//! The config file of `serve` (`--config FILE`, TOML): each key is one of `serve`'s options, and
//! its value becomes that option's default, so the command line and the environment still win.
//! The options are declared once, in `args`; this file only feeds clap.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Arg, ArgAction, Command as ClapCommand, CommandFactory, FromArgMatches};

use super::args::{Cli, Command};

/// The parsed command line, with `serve`'s config file applied.
pub(crate) fn parse() -> anyhow::Result<Command> {
    let command = Cli::command();
    let matches = command.clone().get_matches();
    let config = matches.subcommand_matches("serve").and_then(|serve| serve.get_one::<PathBuf>("config")).cloned();
    let Some(path) = config else { return Ok(Cli::from_arg_matches(&matches)?.command) };
    let entries = read(command.find_subcommand("serve").context("the serve command")?, &path)?;
    let layered = command.mut_subcommand("serve", |serve| apply(serve, entries)).get_matches();
    Ok(Cli::from_arg_matches(&layered)?.command)
}

/// The file's keys and values, checked against `serve`'s options and their value parsers.
fn read(serve: &ClapCommand, path: &Path) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let invalid = || format!("{} is not a valid agentstate config", path.display());
    let table: toml::Table = toml::from_str(&text).with_context(invalid)?;
    let known: Vec<&str> =
        serve.get_arguments().map(|a| a.get_id().as_str()).filter(|id| !matches!(*id, "config" | "help")).collect();
    let mut entries = Vec::new();
    for (key, value) in table {
        let Some(arg) = serve.get_arguments().find(|a| a.get_id() == key.as_str() && key != "config") else {
            bail!("{}: unknown option `{key}`; the options are {}", invalid(), known.join(", "));
        };
        let values = match value {
            toml::Value::Array(items) => items.into_iter().map(scalar).collect::<Option<Vec<_>>>(),
            other => scalar(other).map(|v| vec![v]),
        };
        let Some(mut values) = values else {
            bail!("{}: `{key}` must be a string, a number, a boolean or (for lists) an array of them", invalid())
        };
        let list = matches!(arg.get_action(), ArgAction::Append);
        if !list && values.len() != 1 {
            bail!("{}: `{key}` takes one value, not a list", invalid());
        }
        if key == "agents" {
            // Agent files named in the config file are relative to it.
            let dir = path.parent().unwrap_or(Path::new("."));
            values = values.into_iter().map(|spec| next_to(dir, &spec)).collect();
        }
        for value in &values {
            parse_with(arg, value).with_context(|| format!("{}: `{key}` = {value:?}", invalid()))?;
        }
        entries.push((key, values));
    }
    Ok(entries)
}

fn scalar(value: toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `FILE` or `APP=FILE` with the file resolved against `dir`.
fn next_to(dir: &Path, spec: &str) -> String {
    match spec.split_once('=') {
        Some((app, file)) => format!("{app}={}", dir.join(file).display()),
        None => dir.join(spec).display().to_string(),
    }
}

/// Parses `value` as `arg` would on the command line.
fn parse_with(arg: &Arg, value: &str) -> anyhow::Result<()> {
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return match value {
            "true" | "false" => Ok(()),
            _ => bail!("must be true or false"),
        };
    }
    let long = arg.get_long().context("an option without a long name")?;
    let probe = ClapCommand::new("config").no_binary_name(true).arg(arg.clone());
    probe.try_get_matches_from([format!("--{long}={value}")]).map(drop).map_err(|e| {
        let message = e.render().to_string();
        anyhow::anyhow!("{}", message.trim_start_matches("error: ").lines().next().unwrap_or_default().to_owned())
    })
}

/// `serve` with the file's values as the defaults of its options.
fn apply(serve: ClapCommand, entries: Vec<(String, Vec<String>)>) -> ClapCommand {
    entries.into_iter().fold(serve, |serve, (key, values)| {
        serve.mut_arg(key, |arg| match values.as_slice() {
            [one] if !matches!(arg.get_action(), ArgAction::Append) => arg.default_value(one.clone()),
            many => arg.default_values(many.to_vec()),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve() -> ClapCommand {
        Cli::command().find_subcommand("serve").cloned().unwrap()
    }

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn values_become_defaults_and_mistakes_are_named() {
        let path = file("a.toml", "max_key_chars = 4\naddr = \"127.0.0.1:9\"\ninsecure_allow_remote = true\n");
        let entries = read(&serve(), &path).unwrap();
        let matches = apply(serve(), entries).try_get_matches_from(["serve", "--addr", "127.0.0.1:7"]).unwrap();
        assert_eq!(matches.get_one::<usize>("max_key_chars"), Some(&4));
        assert_eq!(
            matches.get_one::<std::net::SocketAddr>("addr").map(ToString::to_string).as_deref(),
            Some("127.0.0.1:7")
        );
        assert!(matches.get_flag("insecure_allow_remote"));
        for (text, expected) in [
            ("dbb = \"x\"\n", "unknown option `dbb`"),
            ("max_key_chars = \"many\"\n", "`max_key_chars`"),
            ("addr = 5\n", "`addr`"),
            ("config = \"other.toml\"\n", "unknown option `config`"),
            ("max_key_chars = {a = 1}\n", "must be a string"),
            ("addr = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n", "takes one value"),
            ("not toml", "not a valid agentstate config"),
        ] {
            let err = format!("{:#}", read(&serve(), &file("b.toml", text)).unwrap_err());
            assert!(err.contains(expected) && err.contains("not a valid agentstate config"), "{text}: {err}");
        }
    }
}
