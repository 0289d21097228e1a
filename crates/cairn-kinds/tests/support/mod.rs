//! What the analysis and claim tests share: fabricated trial points of one block, measured
//! in one campaign.
// (each test file uses what it needs of this)
#![allow(dead_code)]

use cairn_defs::figures::{self, Figures};
use cairn_kinds::trial_points::TrialPoint;
use serde_json::Value;

/// A small, fixed spread over 6 passes: ±1%, ±0.5%.
pub const SPREAD: [f64; 6] = [0.99, 1.005, 1.0, 0.995, 1.01, 1.002];

/// Pass `pass` of `server` in block `t` at `params` (a JSON object), with `figures`.
pub fn point(server: &str, params: Value, pass: u32, figures: Figures) -> TrialPoint {
    TrialPoint {
        key: format!("{server}{params}{pass}"),
        address: format!("trial/t/{server}{params}#{pass}"),
        trials: "t".into(),
        server: server.into(),
        pass,
        params: params
            .as_object()
            .expect("parameters are a JSON object")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        figures,
        campaign: "boot 0000aaaa".into(),
        ..Default::default()
    }
}

/// [`point`] with one figure, `tps`.
pub fn tps_point(server: &str, params: Value, pass: u32, tps: f64) -> TrialPoint {
    let mut f = Figures::new();
    f.set(&figures::TPS, tps);
    point(server, params, pass, f)
}
