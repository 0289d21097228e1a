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
