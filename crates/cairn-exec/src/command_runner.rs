//! The command runner: runs a command step with `sh -c` in a fresh working directory
//! that holds only its declared inputs, with a declared environment, a timeout, and
//! stdout/stderr and declared outputs captured into the store.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
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
    /// Where its working directory comes from (machine-local, outside `results/`).
    pub work: &'a WorkDirs,
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

/// The working directories of one run's command steps, and the slots they reuse.
///
/// A slot is a directory `step-<pid>-<n>` under the work root holding the command's working
/// directory (`work/`) and the files its stdout and stderr go to. A step takes a slot, and a
/// slot whose working directory the step left empty (its outputs moved into the store) goes
/// back for the next step, its capture files truncated. Why reuse: on a filesystem without
/// a journal (ext4 here), allocating an inode scans past every inode deleted in the last
/// seconds, so a run that made and deleted five inodes per step paid for it quadratically
/// (a 200-step plan's first run spent a fifth of its time in the kernel's `find_inode_bit`).
#[derive(Debug)]
pub struct WorkDirs {
    root: PathBuf,
    free: Mutex<Vec<Slot>>,
    made: AtomicUsize,
}

/// One reusable working directory with its stdout and stderr capture files.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    stdout: File,
    stderr: File,
}

impl Slot {
    fn work(&self) -> PathBuf {
        self.dir.join("work")
    }
}

impl WorkDirs {
    /// Working directories under `root` (machine-local, outside `results/`).
    pub fn new(root: impl Into<PathBuf>) -> WorkDirs {
        WorkDirs {
            root: root.into(),
            free: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
        }
    }

    /// Where working directories are made.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// An empty working directory with empty capture files: a free slot, else a new one.
    fn take(&self) -> Result<Slot, ExecError> {
        if let Some(slot) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(slot);
        }
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let dir = self.root.join(format!("step-{}-{n}", std::process::id()));
        // a slot of an earlier process with our pid (it died): start clean
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io("removing an old working directory"))?;
        }
        std::fs::create_dir_all(dir.join("work")).map_err(io("creating a working directory"))?;
        let open = |name: &str| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join(name))
                .map_err(io(format!("creating the {name} capture")))
        };
        Ok(Slot {
            stdout: open("stdout")?,
            stderr: open("stderr")?,
            dir,
        })
    }

    /// A slot after its step: back to the free list when its working directory is empty
    /// and its captures could be emptied, else removed with everything in it.
    fn give_back(&self, slot: Slot) {
        let empty = std::fs::read_dir(slot.work()).is_ok_and(|mut d| d.next().is_none());
        let reset = |f: &File| f.set_len(0).is_ok() && (&*f).seek(SeekFrom::Start(0)).is_ok();
        if empty && reset(&slot.stdout) && reset(&slot.stderr) {
            self.free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(slot);
        } else {
            let _ = std::fs::remove_dir_all(&slot.dir);
        }
    }
}

impl Drop for WorkDirs {
    fn drop(&mut self) {
        for slot in self
            .free
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = std::fs::remove_dir_all(&slot.dir);
        }
    }
}

/// Takes a slot and gives it back when dropped (whatever way the step ends).
struct SlotGuard<'a> {
    dirs: &'a WorkDirs,
    slot: Option<Slot>,
}

impl std::ops::Deref for SlotGuard<'_> {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        self.slot.as_ref().expect("held until dropped")
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.dirs.give_back(slot);
        }
    }
}

/// The last `n` lines of what a capture file holds, for error messages.
fn capture_tail(f: &File, n: usize) -> String {
    let mut text = Vec::new();
    let mut f = f;
    if f.seek(SeekFrom::Start(0)).is_err() || f.read_to_end(&mut text).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub fn run_command(job: &CommandJob<'_>, store: &Store) -> Result<CommandOutcome, ExecError> {
    if job.cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    let slot = SlotGuard {
        dirs: job.work,
        slot: Some(job.work.take()?),
    };
    let work = slot.work();

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

    let dup = |f: &File, what: &str| f.try_clone().map_err(io(format!("capturing {what}")));
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
        .stdout(dup(&slot.stdout, "stdout")?)
        .stderr(dup(&slot.stderr, "stderr")?)
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
    // end any stragglers the command left in its group (and the command, on a timeout or
    // an error waiting), before its captures are read or the slot is reused
    kill_group(pgid);
    let status = match waited {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.wait();
            job.cancel.unregister(pgid);
            return Err(ExecError::Timeout {
                after: job.timeout.unwrap_or_default(),
                stderr_tail: capture_tail(&slot.stderr, 20),
            });
        }
        Err(e) => {
            let _ = child.wait();
            job.cancel.unregister(pgid);
            return Err(ExecError::Io {
                context: "waiting for the command".into(),
                source: e,
            });
        }
    };
    job.cancel.unregister(pgid);
    let child_time = started.elapsed();

    if job.cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    if let Some(signal) = status.signal() {
        return Err(ExecError::Signalled {
            signal,
            stderr_tail: capture_tail(&slot.stderr, 20),
        });
    }
    let code = status.code().unwrap_or(-1);
    if code != 0 {
        return Err(ExecError::Failed {
            code,
            stderr_tail: capture_tail(&slot.stderr, 20),
        });
    }

    let mut outputs = BTreeMap::new();
    for rel in job.outputs {
        let p = inside(&work, rel)?;
        if !p.is_file() {
            return Err(ExecError::MissingOutput(rel.clone()));
        }
        // moved into the store, not copied: the working directory is left as the command
        // found it, so its slot can serve the next step
        outputs.insert(rel.clone(), store.adopt_file(&p)?);
    }
    // the outputs' parent directories the command made, deepest first (the slot is reused
    // only if nothing is left)
    for rel in job.outputs {
        let mut dir = Path::new(rel).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::remove_dir(work.join(d)).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    let mut logs = BTreeMap::new();
    logs.insert(
        "stdout".to_string(),
        capture(store, &slot.stdout, "stdout")?,
    );
    logs.insert(
        "stderr".to_string(),
        capture(store, &slot.stderr, "stderr")?,
    );
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

/// Put a capture file into the store. Small ones go through memory: their digest is known
/// before any temp file is made, so a blob the store already has (an empty log, an output
/// seen before) costs one `stat` instead of a temp-file write.
fn capture(store: &Store, f: &File, what: &str) -> Result<BlobRef, ExecError> {
    const SMALL: u64 = 1 << 20;
    let mut f = f;
    let len = f.metadata().map_err(io(format!("reading {what}")))?.len();
    f.seek(SeekFrom::Start(0))
        .map_err(io(format!("reading {what}")))?;
    if len <= SMALL {
        let mut bytes = Vec::with_capacity(len as usize);
        f.read_to_end(&mut bytes)
            .map_err(io(format!("reading {what}")))?;
        Ok(store.put_blob(&bytes)?)
    } else {
        Ok(store.put_blob_reader(f, Path::new(what))?)
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: signalling a process group we created; no memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
