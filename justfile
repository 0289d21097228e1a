# cairn's recipes. `just` is optional: each recipe is a plain command.

# a small real study, end to end (same as the README's demo command)
demo:
    bash scripts/demo.sh

# the whole test suite (same as the README's test command and CI)
test:
    bash scripts/test.sh

# the long tier: tests too slow for every CI run (the source build); after `just test`
test-long:
    cargo test --locked -p cairn --test e2e -- --ignored

lint:
    cargo clippy --workspace --all-targets --locked -- -D warnings
    cargo fmt --all -- --check

# cairn's own overhead: cached re-runs and per-step cost on synthetic plans; the quickstart
# study's share of wall time spent measuring (and each trial's setup around it); then the
# native OLTP driver and dataset loader against sysbench 1.0 on one MariaDB test server (needs
# the Docker Engine and Debian's sysbench; sizes and durations: CAIRN_BENCH_* in
# crates/cairn-workload/benches/vs_sysbench.rs)
bench:
    cargo build --release --locked
    target/release/cairn bench
    target/release/cairn bench --study plans/quickstart.kdl
    cargo bench --locked -p cairn-workload --bench vs_sysbench

# the plan parser's coverage-guided fuzz target for `secs` seconds on one core (needs
# `cargo install cargo-fuzz`; RUSTC_BOOTSTRAP lets the stable toolchain take its -Z flags).
# Starts from every plan in the repository and the inputs that once crashed it
# (fuzz/regressions); grows fuzz/corpus/plan; crash inputs land in fuzz/artifacts/plan/.
fuzz secs="600":
    mkdir -p fuzz/corpus/plan
    cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none plan corpus/plan regressions/plan ../tests/plans ../plans ../images -- -max_total_time={{secs}} -rss_limit_mb=2048 -timeout=10 -dict=plan.dict -print_final_stats=1
