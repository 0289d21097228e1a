//! Command steps (`step` nodes): the user's own command, run on the host by the process
//! executor in a fresh working directory holding only its declared inputs and the outputs of
//! the steps it `needs`.

use cairn_exec::command_runner::{run_command, CommandJob};
use cairn_graph::Step;

use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::Env;
use cairn_engine::Kind;

/// The kind of `step` nodes.
pub struct CommandKind;

/// `threads` → `THREADS`, `block-size` → `BLOCK_SIZE`: a parameter's environment name.
fn env_name(param: &str) -> String {
    param
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

impl Kind for CommandKind {
    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        let spec = step
            .command
            .as_ref()
            .ok_or_else(|| failed("a command step without its command"))?;
        let mut vars: Vec<(String, String)> = spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        vars.push(("CAIRN_STEP".into(), step.address.clone()));
        vars.push(("CAIRN_PASS".into(), step.pass.to_string()));
        vars.push(("CAIRN_KEY".into(), key.to_string()));
        for (k, v) in &spec.params {
            vars.push((format!("CAIRN_PARAM_{}", env_name(k)), v.to_string()));
        }
        let mut blobs = Vec::new();
        for (input, done) in step.inputs.iter().zip(inputs) {
            for (path, blob) in &done.outputs {
                blobs.push((blob.clone(), format!("{}/{}", input.mount, path)));
            }
        }
        let job = CommandJob {
            run: &spec.run,
            env: vars,
            files: spec
                .files
                .iter()
                .map(|f| (f.abs.clone(), f.rel.clone()))
                .collect(),
            blobs,
            outputs: &spec.outputs,
            timeout: spec.timeout,
            work: &crate::host(env).work,
            cancel: crate::host(env).cancel(),
        };
        let out = run_command(&job, env.store).map_err(crate::exec_error)?;
        Ok(Built {
            outputs: out.outputs,
            logs: out.logs,
            extra: serde_json::Map::new(),
            command_time: Some(out.child_time),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameter_names_become_environment_names() {
        assert_eq!(super::env_name("block-size"), "BLOCK_SIZE");
        assert_eq!(super::env_name("threads"), "THREADS");
    }
}
