/// mimalloc instead of glibc malloc: see Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // An upstream's guard (zenmode started again by its gateway) before
    // anything else: it parses no options and starts no runtime.
    if let Some(code) = zenmode::gateway::supervisor::run_if_asked() {
        return code;
    }
    // A script's engine (zenmode started again by the script mode).
    if let Some(code) = zenmode::executor::script::run_if_asked() {
        return code;
    }
    zenmode::cli::main()
}
