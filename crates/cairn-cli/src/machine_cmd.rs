//! `cairn machine`: this machine's fingerprint — the class that measurement keys carry (it
//! decides reuse and comparison), its short id (what `--measured-on` takes), and the exact
//! facts recorded beside each measurement.

use serde_json::{json, Value};

use crate::args::Cli;
use crate::context::{self, Exit};
use crate::OK;

pub fn machine(cli: &Cli, host: bool) -> Result<i32, Exit> {
    let m = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let class = m.fingerprint_for(!host);
    let details = m.details().clone();
    let id = cairn_graph::fingerprint::class_id(&class);
    if cli.json {
        println!("{}", json!({"id": id, "class": class, "details": details}));
        return Ok(OK);
    }
    println!("class {id} (in every measurement key; decides reuse and comparison):");
    println!("  cpu model        {}", class.cpu_model);
    println!("  cores / threads  {} / {}", class.cores, class.threads);
    println!("  memory           {} GiB", class.memory_gib);
    println!("  kernel           {}", class.kernel);
    println!("  runtime          {}", class.runtime);
    println!("details (recorded with each measurement, not keyed):");
    if let Some(obj) = details.as_object() {
        for (k, v) in obj {
            match v {
                Value::Object(inner) if inner.is_empty() => println!("  {k:<22} (not visible)"),
                Value::Object(inner) => {
                    println!("  {k}:");
                    for (ik, iv) in inner {
                        println!("    {ik:<28} {}", plain(iv));
                    }
                }
                _ => println!("  {k:<22} {}", plain(v)),
            }
        }
    }
    Ok(OK)
}

/// A JSON value as a person reads it: strings unquoted, `null` as "not visible".
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "(not visible)".into(),
        other => other.to_string(),
    }
}
