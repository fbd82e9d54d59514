//! `agentstate`: the session server and its command line.

mod cli {
    pub(crate) mod args;
    pub(crate) mod backend;
    pub(crate) mod config;
    pub(crate) mod deadline;
    pub(crate) mod serve;
    pub(crate) mod sessions;
    pub(crate) mod telemetry;
}

use cli::args::Command;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = cli::telemetry::init()?;
    match cli::config::parse()? {
        Command::Serve(args) => cli::serve::run(*args).await,
        Command::Migrate(db) => cli::sessions::migrate(&db).await,
        Command::Rekey(db) => cli::sessions::rekey(&db).await,
        Command::Sweep { db, retention } => cli::sessions::sweep(&db, &retention.app_retention).await,
        Command::EncryptionKey { id } => {
            println!("{}", agentstate::crypt::KeyRing::generate(&id)?);
            Ok(())
        }
        Command::State { db, app, user, set, delete } => {
            cli::sessions::shared_state(&db, &app, user.as_deref(), set, &delete).await
        }
        Command::EraseUser { db, app, user, yes } => cli::sessions::erase_user(&db, &app, &user, yes).await,
        Command::Sessions { command } => cli::sessions::run(command).await,
        Command::ImportAdk { db, from, key_prefix, skip_existing } => {
            cli::sessions::import_adk(&db, &from, &key_prefix, skip_existing).await
        }
    }
}
