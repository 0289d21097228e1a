//! The Docker Engine is shared by every test of this process: `cairn clean` removes every
//! container and network cairn labelled, whatever run made it. When the tests were separate
//! binaries, cargo ran them one after another; in one binary they run in parallel threads,
//! so a test that cleans takes the engine exclusively and tests that create resources share it.
//! A test that checks its own next run removes what a killed run left holds it exclusively
//! too: any other Docker run starting in between would remove those leftovers first.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static ENGINE: RwLock<()> = RwLock::new(());

/// Held while a test creates containers, networks or images: many may hold it at once.
pub fn engine_shared() -> RwLockReadGuard<'static, ()> {
    // a test that panicked while holding the lock left nothing the lock protects broken
    ENGINE
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held while a test removes what cairn left in the engine (`cairn clean`, a run after a
/// killed run).
pub fn engine_exclusive() -> RwLockWriteGuard<'static, ()> {
    ENGINE
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A stand-in address for the Docker Engine: a Unix socket that forwards every connection
/// to the engine's own socket, byte for byte, until it is stopped. Stopping it removes the
/// socket, so whoever was given its address finds the engine gone, as a stopped engine is,
/// while the tests beside keep the real one.
pub struct EngineProxy {
    path: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    accepter: Option<std::thread::JoinHandle<()>>,
}

impl EngineProxy {
    /// Listen at `path`, forwarding to `/var/run/docker.sock`.
    pub fn start(path: &std::path::Path) -> EngineProxy {
        use std::os::unix::net::{UnixListener, UnixStream};
        use std::sync::atomic::Ordering;
        let listener = UnixListener::bind(path).expect("bind the engine proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let accepter = std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    }
                    Err(_) => break,
                };
                let _ = client.set_nonblocking(false);
                let Ok(engine) = UnixStream::connect("/var/run/docker.sock") else {
                    continue;
                };
                let pipe = |mut from: UnixStream, mut to: UnixStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                };
                pipe(client.try_clone().unwrap(), engine.try_clone().unwrap());
                pipe(engine, client);
            }
        });
        EngineProxy {
            path: path.to_path_buf(),
            stop,
            accepter: Some(accepter),
        }
    }

    /// `unix://<path>`: the address to give as `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// The engine is gone from this address: no socket, no answer.
    pub fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(a) = self.accepter.take() {
            let _ = a.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for EngineProxy {
    fn drop(&mut self) {
        self.stop();
    }
}
