//! The `oino` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    oino::cli::main()
}
