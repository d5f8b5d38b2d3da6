fn main() {
    let code = gate_check::cli::main();
    gate_check::terminal::flush();
    std::process::exit(code);
}
