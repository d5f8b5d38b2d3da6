fn main() -> std::process::ExitCode {
    let exit = gate_check::cli::main();
    gate_check::terminal::flush();
    exit.into()
}
