//! Host-process executor: runs a command step with `sh -c` in a fresh working directory
//! that holds only its declared inputs, with a declared environment, a timeout, and
//! stdout/stderr and declared outputs captured into the store.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairn_store::{BlobRef, Store, StoreError};
use wait_timeout::ChildExt;

use crate::cancel::CancelToken;

/// One command to run.
#[derive(Debug)]
pub struct CommandJob<'a> {
    pub run: &'a str,
    /// Declared environment plus cairn's own `CAIRN_*` variables.
    pub env: Vec<(String, String)>,
    /// Host files copied in: (source, path relative to the working directory).
    pub files: Vec<(PathBuf, String)>,
    /// Store blobs copied in: (blob, path relative to the working directory).
    pub blobs: Vec<(BlobRef, String)>,
    /// Files the command must leave behind, relative to its working directory.
    pub outputs: &'a [String],
    pub timeout: Option<Duration>,
    /// Where working directories are made (machine-local, outside `results/`).
    pub work_root: &'a Path,
    /// The run's cancellation: the command's process group is registered with it, so
    /// Ctrl-C ends it.
    pub cancel: &'a CancelToken,
}

#[derive(Debug)]
pub struct CommandOutcome {
    pub outputs: BTreeMap<String, BlobRef>,
    pub logs: BTreeMap<String, BlobRef>,
    /// Wall time of the child process alone.
    pub child_time: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("command exited with status {code}{}", tail_suffix(.stderr_tail))]
    Failed { code: i32, stderr_tail: String },
    #[error("command killed by signal {signal}{}", tail_suffix(.stderr_tail))]
    Signalled { signal: i32, stderr_tail: String },
    #[error("command timed out after {after:?} and was killed{}", tail_suffix(.stderr_tail))]
    Timeout {
        after: Duration,
        stderr_tail: String,
    },
    #[error("cancelled")]
    Cancelled,
    #[error("command succeeded but did not produce declared output `{0}`")]
    MissingOutput(String),
}

fn tail_suffix(t: &str) -> String {
    if t.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr ends with:\n{t}")
    }
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ExecError {
    let context = context.into();
    move |source| ExecError::Io { context, source }
}

/// Last `n` lines of a file, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A relative path that stays inside its root (no absolute paths, no `..`).
fn inside(root: &Path, rel: &str) -> Result<PathBuf, ExecError> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(ExecError::Io {
            context: format!("path `{rel}` escapes the working directory"),
            source: std::io::ErrorKind::InvalidInput.into(),
        });
    }
    Ok(root.join(p))
}

fn ensure_parent(p: &Path) -> Result<(), ExecError> {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(io(format!("creating {}", parent.display())))?;
    }
    Ok(())
}

pub fn run_command(job: &CommandJob<'_>, store: &Store) -> Result<CommandOutcome, ExecError> {
    if job.cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    let scratch = tempfile::Builder::new()
        .prefix(&format!("step-{}-", std::process::id()))
        .tempdir_in(job.work_root)
        .map_err(io("creating a working directory"))?;
    let work = scratch.path().join("work");
    std::fs::create_dir(&work).map_err(io("creating a working directory"))?;

    for (src, rel) in &job.files {
        let dest = inside(&work, rel)?;
        ensure_parent(&dest)?;
        std::fs::copy(src, &dest).map_err(io(format!("copying input {}", src.display())))?;
    }
    for (blob, rel) in &job.blobs {
        let dest = inside(&work, rel)?;
        ensure_parent(&dest)?;
        store.copy_blob_to(blob, &dest)?;
    }

    let stdout_path = scratch.path().join("stdout");
    let stderr_path = scratch.path().join("stderr");
    let stdout = File::create(&stdout_path).map_err(io("creating stdout capture"))?;
    let stderr = File::create(&stderr_path).map_err(io("creating stderr capture"))?;

    // absolute: a PATH search costs a failed execve per earlier PATH entry
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(job.run)
        .current_dir(&work)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("HOME", &work)
        .env("LANG", "C.UTF-8")
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // its own process group, so a timeout or Ctrl-C ends everything it started
        .process_group(0);

    let started = Instant::now();
    let mut child = cmd.spawn().map_err(io("starting /bin/sh"))?;
    let pgid = child.id() as i32;
    job.cancel.register(pgid);
    let waited = match job.timeout {
        Some(t) => child.wait_timeout(t),
        None => child.wait().map(Some),
    };
    let status = match waited {
        Ok(Some(status)) => status,
        Ok(None) => {
            kill_group(pgid);
            let _ = child.wait();
            job.cancel.unregister(pgid);
            return Err(ExecError::Timeout {
                after: job.timeout.unwrap_or_default(),
                stderr_tail: tail(&stderr_path, 20),
            });
        }
        Err(e) => {
            kill_group(pgid);
            let _ = child.wait();
            job.cancel.unregister(pgid);
            return Err(ExecError::Io {
                context: "waiting for the command".into(),
                source: e,
            });
        }
    };
    // end any stragglers the command left in its group
    kill_group(pgid);
    job.cancel.unregister(pgid);
    let child_time = started.elapsed();

    if job.cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    if let Some(signal) = status.signal() {
        return Err(ExecError::Signalled {
            signal,
            stderr_tail: tail(&stderr_path, 20),
        });
    }
    let code = status.code().unwrap_or(-1);
    if code != 0 {
        return Err(ExecError::Failed {
            code,
            stderr_tail: tail(&stderr_path, 20),
        });
    }

    let mut outputs = BTreeMap::new();
    for rel in job.outputs {
        let p = inside(&work, rel)?;
        if !p.is_file() {
            return Err(ExecError::MissingOutput(rel.clone()));
        }
        outputs.insert(rel.clone(), capture(store, &p)?);
    }
    let mut logs = BTreeMap::new();
    logs.insert("stdout".to_string(), capture(store, &stdout_path)?);
    logs.insert("stderr".to_string(), capture(store, &stderr_path)?);
    Ok(CommandOutcome {
        outputs,
        logs,
        child_time,
    })
}

/// Make the directory working directories go in (once per run, not per step), and
/// remove those left by runs that were killed. Returns how many were removed.
pub fn prepare_work_root(work_root: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(work_root)?;
    Ok(clean_stale_work_dirs(work_root))
}

/// Remove working directories left by runs that were killed (their pid is gone).
fn clean_stale_work_dirs(work_root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(work_root) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("step-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Put a file into the store. Small files go through memory: their digest is known
/// before any temp file is made, so a blob the store already has (an empty log, an
/// output seen before) costs one `stat` instead of a temp-file write and delete.
fn capture(store: &Store, path: &Path) -> Result<BlobRef, ExecError> {
    const SMALL: u64 = 1 << 20;
    let len = std::fs::metadata(path)
        .map_err(io(format!("reading {}", path.display())))?
        .len();
    if len <= SMALL {
        let bytes = std::fs::read(path).map_err(io(format!("reading {}", path.display())))?;
        Ok(store.put_blob(&bytes)?)
    } else {
        Ok(store.put_blob_file(path)?)
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: signalling a process group we created; no memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
