//! The `cairn` binary: parse arguments, run the command, exit with its code.

fn main() {
    std::process::exit(cairn_cli::main());
}
