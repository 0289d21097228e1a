//! super-smack's `http_auth` table and its dictionary, generated from a seed instead of `gen-data` and a `words.dat` file, and loaded with parallel multi-row INSERTs.
//!
//! `select-key.smack` creates
//! `http_auth (username char(25) not null primary key, pass char(25), uid integer not null,
//! gid integer not null)` and fills it from `gen-data -n 90000 -f %12-12s%n,%25-25s,%n,%d`:
//! row `i` (1-based) is `username` = 12 random letters followed by `i`, `pass` = 25 random
//! letters, `uid` = `i`, `gid` = a random non-negative 31-bit number. gen-data draws letters
//! as `'a' + rand() % 25`, i.e. `a`..`y` (never `z`); so do we.
//!
//! The `word` dictionary is the same file read with `delim ","` (the usernames) and
//! `file_size_equiv "45000"`: super-smack keeps every `step`-th line, `step = file bytes /
//! 45000`, which for 90000 rows is about 730 words spread over the whole key range. The
//! file's size is computed here from the generated rows (line lengths as gen-data prints
//! them), so the default dictionary matches super-smack's; `words` asks for a size instead.
//!
//! Row `i` is drawn from its own stream of the seed, so any row (and the dictionary) can be
//! regenerated without the others and the data do not depend on the load's parallelism.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use crate::conn::{check_identifier, Target};
use crate::rand::Rng;
use crate::Error;

/// The table's name in `select-key.smack`.
pub const TABLE: &str = "http_auth";
/// `gen-data -n 90000` and `min_rows "90000"` in `select-key.smack`.
pub const DEFAULT_ROWS: u32 = 90_000;
/// `file_size_equiv "45000"` of the `word` dictionary in `select-key.smack`.
pub const DEFAULT_FILE_SIZE_EQUIV: u64 = 45_000;
/// Letters of the random prefix of a username (`%12-12s`).
pub const USERNAME_LETTERS: usize = 12;
/// Letters of a password (`%25-25s`).
pub const PASS_LETTERS: usize = 25;

/// What to create and which dictionary the workload draws from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmackDataset {
    /// Rows of `http_auth` (gen-data's `-n`).
    pub rows: u32,
    /// Dictionary size; `None` = super-smack's `file_size_equiv` rule.
    pub words: Option<u32>,
    /// super-smack's `file_size_equiv` (used when `words` is `None`).
    pub file_size_equiv: u64,
    /// `ENGINE = …` for the table; `None` = the server's default, as the smack file's
    /// `create` has no engine (MySQL 5.0's default was MyISAM, MariaDB's is InnoDB).
    pub engine: Option<String>,
    pub seed: u64,
    /// Connections loading row ranges at once.
    pub parallel: u32,
    /// Largest multi-row INSERT statement, in bytes.
    pub insert_bytes: usize,
    /// Drop an existing `http_auth` first (otherwise loading over it fails).
    pub replace: bool,
}

impl Default for SmackDataset {
    fn default() -> Self {
        SmackDataset::new(DEFAULT_ROWS)
    }
}

/// One generated row of `http_auth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAuthRow {
    pub username: String,
    pub pass: String,
    pub uid: u32,
    pub gid: u32,
}

impl SmackDataset {
    /// `rows` rows with super-smack's dictionary rule and the server's default engine.
    pub fn new(rows: u32) -> Self {
        SmackDataset {
            rows,
            words: None,
            file_size_equiv: DEFAULT_FILE_SIZE_EQUIV,
            engine: None,
            seed: 0,
            parallel: 4,
            insert_bytes: 512 * 1024,
            replace: false,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(e) = &self.engine {
            check_identifier(e)?;
        }
        // uid is a signed INTEGER holding the row number
        if self.rows == 0 || self.rows > i32::MAX as u32 {
            return Err(Error::Invalid(format!(
                "smack rows must be between 1 and {}, not {}",
                i32::MAX,
                self.rows
            )));
        }
        match self.words {
            Some(0) => return Err(Error::Invalid("smack words must be at least 1".into())),
            Some(w) if w > self.rows => {
                return Err(Error::Invalid(format!(
                    "smack words ({w}) cannot exceed rows ({}): every word is a username",
                    self.rows
                )))
            }
            _ => {}
        }
        if self.parallel == 0 || self.file_size_equiv == 0 {
            return Err(Error::Invalid(
                "smack parallel and file-size-equiv must be at least 1".into(),
            ));
        }
        if self.insert_bytes < 1024 {
            return Err(Error::Invalid("insert_bytes must be at least 1024".into()));
        }
        Ok(())
    }

    /// Row `i` (1-based). `gid` is drawn first so the data file's size needs one draw a row.
    pub fn row(&self, i: u32) -> HttpAuthRow {
        let mut rng = Rng::for_stream(self.seed, i as u64);
        let gid = gid(&mut rng);
        let mut username = String::with_capacity(USERNAME_LETTERS + 10);
        push_letters(&mut rng, USERNAME_LETTERS, &mut username);
        username.push_str(&i.to_string());
        let mut pass = String::with_capacity(PASS_LETTERS);
        push_letters(&mut rng, PASS_LETTERS, &mut pass);
        HttpAuthRow {
            username,
            pass,
            uid: i,
            gid,
        }
    }

    /// Size of gen-data's output for these rows: `username,pass,uid,gid\n` per row.
    pub fn data_file_bytes(&self) -> u64 {
        (1..=self.rows)
            .map(|i| {
                let g = gid(&mut Rng::for_stream(self.seed, i as u64));
                let n = digits(i as u64);
                (USERNAME_LETTERS as u64 + n)
                    + 1
                    + PASS_LETTERS as u64
                    + 1
                    + n
                    + 1
                    + digits(g as u64)
                    + 1
            })
            .sum()
    }

    /// Every how many rows the dictionary takes a username (super-smack's `step`).
    pub fn dictionary_step(&self) -> u32 {
        let step = match self.words {
            Some(w) => (self.rows / w.max(1)) as u64,
            None => self.data_file_bytes() / self.file_size_equiv.max(1),
        };
        step.clamp(1, self.rows as u64) as u32
    }

    /// The dictionary: the usernames of rows `step`, `2·step`, … (as super-smack's
    /// `Dictionary::load_file` keeps lines whose number is a multiple of `step`), at most
    /// `words` of them. Every word is the key of an existing row.
    pub fn dictionary(&self) -> Vec<String> {
        let step = self.dictionary_step();
        let limit = self.words.map_or(usize::MAX, |w| w as usize);
        (1..=self.rows / step)
            .take(limit)
            .map(|k| self.row(k * step).username)
            .collect()
    }
}

/// `gen-data`'s `%d`: `rand()`, a number in `[0, 2^31 - 1]`.
fn gid(rng: &mut Rng) -> u32 {
    (rng.next_u64() >> 33) as u32
}

/// gen-data's `%s`: letters `'a' + rand() % 25`, i.e. `a`..`y`.
fn push_letters(rng: &mut Rng, n: usize, out: &mut String) {
    for _ in 0..n {
        out.push((b'a' + rng.uniform(0, 24) as u8) as char);
    }
}

fn digits(mut n: u64) -> u64 {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// The `CREATE TABLE` statement of `select-key.smack`, with an engine if one is given.
pub fn create_table_sql(engine: Option<&str>) -> String {
    let mut s = format!(
        "CREATE TABLE {TABLE} (username char(25) not null primary key, pass char(25), uid integer not null, gid integer not null)"
    );
    if let Some(e) = engine {
        s.push_str(" ENGINE = ");
        s.push_str(e);
    }
    s
}

/// What [`load_smack`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmackLoad {
    pub rows: u64,
    pub insert_statements: u64,
    pub insert_bytes: u64,
    /// Dictionary size and step (for the record: the keys the workload will ask for).
    pub words: u64,
    pub dictionary_step: u32,
    pub elapsed_s: f64,
}

/// Creates the database if needed, then creates `http_auth` and loads its rows,
/// `parallel` row ranges at a time. The first error stops the others and is returned.
pub fn load_smack(target: &Target, spec: &SmackDataset) -> Result<SmackLoad, Error> {
    spec.validate()?;
    target.ensure_database()?;
    let start = Instant::now();
    {
        let mut c = target.connect()?;
        if spec.replace {
            c.query_drop(format!("DROP TABLE IF EXISTS {TABLE}"))
                .map_err(|e| Error::sql(format!("drop {TABLE}"), e))?;
        }
        c.query_drop(create_table_sql(spec.engine.as_deref()))
            .map_err(|e| Error::sql(format!("create {TABLE}"), e))?;
    }
    // contiguous ranges of about the same size, one per connection
    let parts = spec.parallel.min(spec.rows);
    let per = spec.rows.div_ceil(parts);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<(u64, u64), Error>>> = Mutex::new(Vec::new());
    // a loader that cannot start or panics stops the others and fails the load
    crate::threads::run_threads(
        parts,
        "load",
        |p| {
            let first = p * per + 1;
            let last = ((p + 1) * per).min(spec.rows);
            if first > last {
                return;
            }
            let r = target
                .connect()
                .and_then(|mut c| load_range(&mut c, spec, first, last, &failed));
            if r.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            results.lock().unwrap().push(r);
        },
        || failed.store(true, Ordering::SeqCst),
    )?;
    let (mut statements, mut bytes) = (0, 0);
    for r in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let (s, b) = r?;
        statements += s;
        bytes += b;
    }
    let step = spec.dictionary_step();
    let words = (spec.rows / step).min(spec.words.unwrap_or(u32::MAX));
    Ok(SmackLoad {
        rows: spec.rows as u64,
        insert_statements: statements,
        insert_bytes: bytes,
        words: words as u64,
        dictionary_step: step,
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

/// Inserts rows `first..=last`; returns (statements, bytes).
fn load_range(
    conn: &mut mysql::Conn,
    spec: &SmackDataset,
    first: u32,
    last: u32,
    failed: &AtomicBool,
) -> Result<(u64, u64), Error> {
    let head = format!("INSERT INTO {TABLE} (username, pass, uid, gid) VALUES");
    let mut buf = String::with_capacity(spec.insert_bytes + 128);
    let mut row = String::with_capacity(128);
    let (mut statements, mut bytes) = (0u64, 0u64);
    let mut flush = |buf: &mut String| -> Result<(), Error> {
        conn.query_drop(buf.as_str())
            .map_err(|e| Error::sql(format!("insert into {TABLE}"), e))?;
        statements += 1;
        bytes += buf.len() as u64;
        buf.clear();
        Ok(())
    };
    for i in first..=last {
        let r = spec.row(i);
        row.clear();
        // letters and digits only: nothing to escape
        write!(row, "('{}','{}',{},{})", r.username, r.pass, r.uid, r.gid)
            .expect("writing to a String");
        if !buf.is_empty() && buf.len() + 1 + row.len() > spec.insert_bytes {
            if failed.load(Ordering::SeqCst) {
                return Ok((statements, bytes));
            }
            flush(&mut buf)?;
        }
        if buf.is_empty() {
            buf.push_str(&head);
        } else {
            buf.push(',');
        }
        buf.push_str(&row);
    }
    if !buf.is_empty() {
        flush(&mut buf)?;
    }
    Ok((statements, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_gen_data_shape_and_are_seeded() {
        let d = SmackDataset::new(1000);
        let r = d.row(37);
        assert_eq!(r, d.row(37));
        assert_eq!(r.username.len(), 12 + 2);
        assert!(r.username[..12].bytes().all(|b| (b'a'..=b'y').contains(&b)));
        assert!(r.username.ends_with("37"));
        assert_eq!(r.pass.len(), 25);
        assert!(r.pass.bytes().all(|b| (b'a'..=b'y').contains(&b)));
        assert_eq!(r.uid, 37);
        assert!(r.gid <= i32::MAX as u32);
        let other = SmackDataset {
            seed: 1,
            ..d.clone()
        };
        assert_ne!(other.row(37).username, r.username);
        assert_ne!(d.row(38).username[..12], r.username[..12]);
    }

    #[test]
    fn dictionary_is_deterministic_and_follows_file_size_equiv() {
        let d = SmackDataset::default();
        let bytes = d.data_file_bytes();
        // 12 + ~5 digits, 25 letters, ~5 digits, ~10 digits, 3 commas, newline ≈ 61 bytes a row
        assert!((55 * 90_000..66 * 90_000).contains(&bytes), "{bytes} bytes");
        let step = d.dictionary_step();
        assert_eq!(step as u64, bytes / 45_000);
        let words = d.dictionary();
        assert_eq!(words.len() as u32, 90_000 / step);
        assert!((650..800).contains(&words.len()), "{}", words.len());
        assert_eq!(words, SmackDataset::default().dictionary());
        // every word is the username of row k·step
        assert_eq!(words[0], d.row(step).username);
        assert_eq!(words[9], d.row(10 * step).username);
        let mut uniq = words.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), words.len());
    }

    #[test]
    fn small_tables_use_every_row_and_words_sets_the_size() {
        let d = SmackDataset::new(1000);
        assert_eq!(d.dictionary_step(), 1);
        assert_eq!(d.dictionary().len(), 1000);
        let d = SmackDataset {
            words: Some(300),
            ..SmackDataset::new(1000)
        };
        assert_eq!(d.dictionary_step(), 3);
        let w = d.dictionary();
        assert_eq!(w.len(), 300);
        assert_eq!(w[299], d.row(900).username);
        let d = SmackDataset {
            words: Some(1000),
            ..SmackDataset::new(1000)
        };
        assert_eq!(d.dictionary().len(), 1000);
    }

    #[test]
    fn data_file_size_counts_gen_data_lines() {
        let d = SmackDataset::new(3);
        let expected: u64 = (1..=3)
            .map(|i| {
                let r = d.row(i);
                format!("{},{},{},{}\n", r.username, r.pass, r.uid, r.gid).len() as u64
            })
            .sum();
        assert_eq!(d.data_file_bytes(), expected);
    }

    #[test]
    fn bad_specs_are_rejected() {
        let bad = |d: SmackDataset| d.validate().unwrap_err().to_string();
        assert!(bad(SmackDataset::new(0)).contains("rows"));
        assert!(bad(SmackDataset {
            words: Some(11),
            ..SmackDataset::new(10)
        })
        .contains("cannot exceed"));
        assert!(bad(SmackDataset {
            engine: Some("InnoDB; DROP".into()),
            ..SmackDataset::new(10)
        })
        .contains("identifier"));
    }

    #[test]
    fn create_table_is_select_key_smack_s() {
        assert_eq!(
            create_table_sql(None),
            "CREATE TABLE http_auth (username char(25) not null primary key, pass char(25), uid integer not null, gid integer not null)"
        );
        assert!(create_table_sql(Some("MyISAM")).ends_with(") ENGINE = MyISAM"));
    }
}
