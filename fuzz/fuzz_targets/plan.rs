//! Fuzz target for the plan parser: any text must give a plan or an error, never a crash.
//!
//! Each input (bytes, read as UTF-8 with invalid sequences replaced so no input is wasted) goes
//! through what `cairn check` does with a plan given as text: `parse_str`, then `resolve` when it
//! parses, and `format_text`. A returned error is fine; a panic, abort, stack overflow, runaway
//! allocation (`-rss_limit_mb`) or hang (`-timeout`) is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(plan) = cairn_plan::parse_str("fuzz.kdl", &text) {
        let _ = cairn_graph::resolve(&plan);
    }
    let _ = cairn_plan::format_text(&text);
});
