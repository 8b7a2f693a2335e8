fn main() -> std::process::ExitCode {
    zenmode::cli::main()
}
