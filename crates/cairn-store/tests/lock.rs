//! The store lock across processes: the test binary re-runs itself as the lock holder.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cairn_store::{Store, StoreError};

const CHILD_ENV: &str = "CAIRN_STORE_LOCK_CHILD";
const READY: &str = "CAIRN_STORE_LOCK_HELD";

/// Not a test on its own: when run with `CAIRN_STORE_LOCK_CHILD=<results dir>`, takes the
/// store lock, prints `CAIRN_STORE_LOCK_HELD`, and holds it until its stdin closes.
#[test]
fn lock_child_helper() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&dir)).unwrap();
    let lock = store.try_lock().unwrap();
    // Safety valve: never outlive a parent that forgot us.
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(60));
        std::process::exit(3);
    });
    // libtest prints "test lock_child_helper ... " before this on the same line.
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {}
    drop(lock);
}

/// Spawns the holder and waits until it has the lock.
fn spawn_holder(dir: &Path) -> (Child, ChildStdin) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "lock_child_helper",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "lock holder exited early"
        );
        if line.trim_end().ends_with(READY) {
            break;
        }
    }
    // Keep draining the child's stdout so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, stdin)
}

#[test]
fn try_lock_from_another_process_names_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (mut child, stdin) = spawn_holder(dir.path());
    let err = store.try_lock().unwrap_err();
    match &err {
        StoreError::Locked { holder, path } => {
            assert_eq!(holder.pid, Some(child.id()));
            assert!(holder
                .command
                .as_deref()
                .unwrap()
                .contains("lock_child_helper"));
            assert_eq!(path, &dir.path().join("store/lock"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&format!("pid {}", child.id())), "{msg}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Free again; the holder cleared its details.
    let lock = store.try_lock().unwrap();
    drop(lock);
}

#[test]
fn lock_waits_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (mut child, stdin) = spawn_holder(dir.path());
    let released = Arc::new(AtomicBool::new(false));
    let seen_pid = Arc::new(Mutex::new(None));
    let calls = Arc::new(Mutex::new(0));
    let lock = {
        let released = released.clone();
        let seen_pid = seen_pid.clone();
        let calls = calls.clone();
        store
            .lock(move |holder| {
                *calls.lock().unwrap() += 1;
                *seen_pid.lock().unwrap() = holder.pid;
                // Release the holder only after we have started waiting.
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    released.store(true, Ordering::SeqCst);
                    drop(stdin);
                });
            })
            .unwrap()
    };
    assert!(
        released.load(Ordering::SeqCst),
        "lock returned before the holder let go"
    );
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(*seen_pid.lock().unwrap(), Some(child.id()));
    assert!(child.wait().unwrap().success());
    // We hold it now: another process/descriptor cannot take it.
    assert!(matches!(store.try_lock(), Err(StoreError::Locked { .. })));
    drop(lock);
    // An uncontended lock never calls on_wait.
    let l = store.lock(|_| panic!("not held")).unwrap();
    drop(l);
}
