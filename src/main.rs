fn main() {
    std::process::exit(gate_check::cli::main());
}
