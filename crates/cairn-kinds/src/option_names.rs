//! A server's option names against the names its image's server program takes: the list is
//! read once per image (keyed by the image step's record key, the image's content) and kept in
//! the store, so `cairn check` and every dataset and trial start refuse a typo'd option
//! (`innodb_bufer_pool_size`) before a dataset loads, not when the server fails to start.

use std::path::PathBuf;

use cairn_exec::runtime::Runtimes;
use cairn_exec::system::variables::{OptionName, ServerVariables};
use cairn_exec::system::DbSystem;
use cairn_store::Store;

use crate::server_run::{config_options, system_of, ServerDef};

/// Where the store keeps the option names of `server` (`<system>.<executor>`: a runtime
/// that runs the host's program lists the host's) for the image whose record key is
/// `image_key`.
fn kept_at(store: &Store, image_key: &str, server: &str) -> PathBuf {
    store
        .root()
        .join("server-variables")
        .join(format!("{image_key}.{server}"))
}

/// What a kept list is named by, beside the image: the system and the runtime.
fn server_of(def: &ServerDef, system: &dyn DbSystem) -> String {
    format!("{}.{}", system.name(), def.executor_or_default())
}

/// The option names of `server` (`<system>.<executor>`) in the image `image_key`, if the
/// store keeps them (nothing runs: `cairn check` stays fast and works offline).
pub fn kept(store: &Store, image_key: &str, server: &str) -> Option<ServerVariables> {
    let text = std::fs::read_to_string(kept_at(store, image_key, server)).ok()?;
    let names = ServerVariables::from_text(&text);
    (!names.is_empty()).then_some(names)
}

/// Keep `names` for the image (written whole, then renamed: a reader never sees half).
fn keep(
    store: &Store,
    image_key: &str,
    server: &str,
    names: &ServerVariables,
) -> Result<(), String> {
    let path = kept_at(store, image_key, server);
    let dir = path.parent().expect("has a directory");
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    // unique per writer: two dataset steps of one run may keep the same image's names at
    // once (the build lane runs them side by side), and a shared temp name lets one rename
    // the other's file away
    static WRITERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let writer = WRITERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        "{image_key}.{server}.tmp-{}-{writer}",
        std::process::id()
    ));
    std::fs::write(&tmp, names.to_text())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("keep the option names at {}: {e}", path.display())
        })
}

/// The option names the server of `def` takes in the image `image` (reference) whose record
/// key is `image_key`: kept ones, else read from the image by the server's runtime and kept.
/// `None`: its system or runtime cannot list them.
pub fn names_in_image(
    store: &Store,
    runtimes: &Runtimes,
    def: &ServerDef,
    image: &str,
    image_key: &str,
) -> Result<Option<ServerVariables>, String> {
    let system = system_of(def)?;
    let server = server_of(def, system);
    if let Some(names) = kept(store, image_key, &server) {
        return Ok(Some(names));
    }
    let runtime = runtimes.get(def.executor_or_default())?;
    let Some(output) = runtime.variables_output(Some(image), system)? else {
        return Ok(None);
    };
    let names = system.variables(&output);
    if names.is_empty() {
        return Err(format!(
            "listing the option names of {} in image `{image}` found none",
            system.name()
        ));
    }
    keep(store, image_key, &server, &names)?;
    Ok(Some(names))
}

/// Every option of `def` its server does not take, by `names`: each an error naming the
/// option (`what` = `option`, for the plan to point at), with the closest name it takes.
pub fn unknown_options(
    def: &ServerDef,
    names: &ServerVariables,
    image: &str,
) -> Vec<cairn_workload::Error> {
    let Ok(system) = system_of(def) else {
        return Vec::new();
    };
    config_options(def, system)
        .into_iter()
        .filter_map(|(key, _)| match system.option_name(names, &key) {
            OptionName::Known | OptionName::Unchecked => None,
            OptionName::Unknown { closest } => Some(cairn_workload::Error::Param {
                what: "option",
                message: unknown_message(system, &key, closest.as_deref(), image),
                name: key,
            }),
        })
        .collect()
}

fn unknown_message(system: &dyn DbSystem, key: &str, closest: Option<&str>, image: &str) -> String {
    let hint = closest.map_or_else(String::new, |c| format!("; did you mean `{c}`?"));
    format!(
        "server option `{}`: {} in image `{image}` takes no option of this name{hint}",
        key.escape_debug(),
        system.process_name()
    )
}

/// The run path's check, right after the image is there and before the server starts (so
/// before a dataset loads): the first option the server does not take fails the step. A
/// runtime or system that cannot list its names checks nothing.
pub fn check_before_start(
    store: &Store,
    runtimes: &Runtimes,
    def: &ServerDef,
    image: &str,
    image_key: &str,
) -> Result<(), String> {
    let Some(names) = names_in_image(store, runtimes, def, image, image_key)? else {
        return Ok(());
    };
    match unknown_options(def, &names, image).into_iter().next() {
        Some(cairn_workload::Error::Param { message, .. }) => Err(message),
        Some(other) => Err(other.to_string()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(options: serde_json::Value) -> ServerDef {
        ServerDef {
            options: serde_json::from_value(options).unwrap(),
            ..ServerDef::default()
        }
    }

    #[test]
    fn kept_names_are_read_back_and_typos_named_with_the_closest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(kept(&store, "k1", "mariadb.docker").is_none());
        let names = ServerVariables::new(["innodb_buffer_pool_size", "max_connections"]);
        keep(&store, "k1", "mariadb.docker", &names).unwrap();
        assert_eq!(kept(&store, "k1", "mariadb.docker"), Some(names.clone()));
        assert!(kept(&store, "k1", "mysql.docker").is_none(), "per system");
        let d = def(
            serde_json::json!({"innodb_bufer_pool_size": "256M", "max-connections": 9, "loose-x": 1}),
        );
        let unknown = unknown_options(&d, &names, "cairn/i:k1");
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        let cairn_workload::Error::Param {
            what,
            name,
            message,
        } = &unknown[0]
        else {
            panic!("{:?}", unknown[0])
        };
        assert_eq!((*what, name.as_str()), ("option", "innodb_bufer_pool_size"));
        assert_eq!(
            message,
            "server option `innodb_bufer_pool_size`: mariadbd in image `cairn/i:k1` takes no option of this name; did you mean `innodb_buffer_pool_size`?"
        );
        // a kept list costs no container: the run path's check answers from the store
        let err =
            check_before_start(&store, Runtimes::registered(), &d, "cairn/i:k1", "k1").unwrap_err();
        assert!(
            err.contains("did you mean `innodb_buffer_pool_size`?"),
            "{err}"
        );
    }
}
