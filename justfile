# cairn's recipes. `just` is optional: each recipe is a plain command.

# a small real study, end to end (same as the README's demo command)
demo:
    bash scripts/demo.sh

# the whole test suite (same as the README's test command and CI)
test:
    bash scripts/test.sh

lint:
    cargo clippy --workspace --all-targets --locked -- -D warnings
    cargo fmt --all -- --check

# cairn's own overhead: cached re-runs and per-step cost on synthetic plans; then the native
# OLTP driver and dataset loader against sysbench 1.0 on one MariaDB test server (needs the
# Docker Engine and Debian's sysbench; sizes and durations: CAIRN_BENCH_* in
# crates/cairn-workload/benches/vs_sysbench.rs)
bench:
    cargo build --release --locked
    target/release/cairn bench
    cargo bench --locked -p cairn-workload --bench vs_sysbench
