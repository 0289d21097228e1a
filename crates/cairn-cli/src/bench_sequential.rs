//! `cairn bench --sequential`: the proof of the `until="decided"` design by simulation —
//! thousands of A/A and A/B studies through its real stopping and verdict code, with the
//! false-positive rate, power and passes used beside a fixed design and naive peeking.

use std::time::Instant;

use cairn_analysis::sequential::{simulate, Design, Noise, Outcome, Scenario};

use crate::context::Exit;
use crate::{FAILED, OK};

/// The design simulated: looks after every pass from 4 to 12 at α = 0.05.
const MIN: usize = 4;
const MAX: usize = 12;
const ALPHA: f64 = 0.05;
/// Bootstrap resamples per comparison (a report uses 10,000; the false-positive rate rests
/// on the exact rank test).
const RESAMPLES: u32 = 2000;
const SEED: u64 = 20_261_205;

pub fn bench_sequential(studies: usize, jobs: usize) -> Result<i32, Exit> {
    let design = Design::new(MIN, MAX, ALPHA).map_err(|e| {
        eprintln!("error: {e}");
        Exit(FAILED)
    })?;
    let noises = [Noise::Normal, Noise::LogNormal, Noise::Outliers];
    let mut scenarios = Vec::new();
    for noise in noises {
        for cv in [0.01, 0.02, 0.05, 0.10, 0.20] {
            scenarios.push((
                Scenario {
                    noise,
                    cv,
                    effect: 0.0,
                },
                studies,
            ));
        }
    }
    for noise in noises {
        for cv in [0.02, 0.05, 0.10] {
            for effect in [0.02, 0.05, 0.10] {
                scenarios.push((Scenario { noise, cv, effect }, studies.div_ceil(3)));
            }
        }
    }
    let total: usize = scenarios.iter().map(|s| s.1).sum();
    println!(
        "sequential design: looks after every pass from {MIN} to {MAX} passes per side, α = {ALPHA}, O'Brien–Fleming-type α spending"
    );
    for look in design.looks() {
        println!(
            "  look {:>2}: {:>2} passes per side, boundary z {:.3}, nominal α {}",
            look.look,
            look.passes,
            look.z,
            cairn_analysis::sequential::alpha_text(look.nominal_alpha)
        );
    }
    println!("{total} simulated studies ({RESAMPLES} bootstrap resamples each comparison, seed {SEED}) on {jobs} threads …");
    let started = Instant::now();
    let outcomes = run_all(&design, &scenarios, jobs.max(1))?;
    let took = started.elapsed().as_secs_f64();
    println!();
    println!("A/A (no true difference): share called faster or slower");
    println!("| noise | CV | studies | sequential | fixed {MAX} passes | peeking at α every pass | mean passes (fixed: {MAX}) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let (mut aa_studies, mut aa_shifted) = (0, 0);
    for o in outcomes.iter().filter(|o| o.scenario.effect == 0.0) {
        aa_studies += o.studies;
        aa_shifted += o.shifted;
        println!(
            "| {} | {}% | {} | {:.2}% | {:.2}% | {:.2}% | {:.2} |",
            o.scenario.noise,
            o.scenario.cv * 100.0,
            o.studies,
            100.0 * o.rate(o.shifted),
            100.0 * o.rate(o.fixed_shifted),
            100.0 * o.rate(o.peeking_shifted),
            o.mean_passes()
        );
    }
    println!(
        "all A/A: {aa_shifted} of {aa_studies} called different: {:.2}% (aim ≤ {:.0}%)",
        100.0 * aa_shifted as f64 / aa_studies as f64,
        ALPHA * 100.0
    );
    println!();
    println!("A/B (the variant truly faster): power = share called faster");
    println!("| noise | CV | effect | studies | power, sequential | power, fixed {MAX} passes | mean passes (fixed: {MAX}) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for o in outcomes.iter().filter(|o| o.scenario.effect > 0.0) {
        println!(
            "| {} | {}% | +{}% | {} | {:.1}% | {:.1}% | {:.2} |",
            o.scenario.noise,
            o.scenario.cv * 100.0,
            o.scenario.effect * 100.0,
            o.studies,
            100.0 * o.rate(o.faster),
            100.0 * o.rate(o.fixed_faster),
            o.mean_passes()
        );
    }
    println!();
    println!("{total} studies in {took:.1} s");
    Ok(OK)
}

/// Every scenario, spread over `jobs` threads; each scenario's seed is fixed by its place.
fn run_all(
    design: &Design,
    scenarios: &[(Scenario, usize)],
    jobs: usize,
) -> Result<Vec<Outcome>, Exit> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; scenarios.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(scenario, studies)) = scenarios.get(i) else {
                    break;
                };
                let outcome = simulate(design, scenario, studies, SEED + i as u64, RESAMPLES);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| match r {
            Some(Ok(o)) => Ok(o),
            Some(Err(e)) => {
                eprintln!("error: a simulated study: {e}");
                Err(Exit(FAILED))
            }
            None => Err(Exit(FAILED)),
        })
        .collect()
}
