//! labctl process: parses the command line, runs one command, prints its result.

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli = labctl::Cli::parse();
    let json = cli.json;
    match labctl::execute(cli).await {
        Ok(output) => {
            println!("{}", labctl::render(&output, json));
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("labctl: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
