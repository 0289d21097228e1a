//! The read path's protocol spoken directly on the connection's socket: `COM_STMT_EXECUTE` and `COM_QUERY` written from one reused buffer, result sets skipped packet by packet without decoding a row.
//!
//! Why not the `mysql` crate here: every `exec_drop` of it parses each row into a `Row` (a
//! `Vec` of `Value`s, a fresh `Vec<u8>` per column and per packet, an `Arc` of the columns),
//! and it has no call that reads a result set without doing so. The figures need only that
//! a statement succeeded (or which server error it failed with): the rows are sent by the
//! server and received, in full, but only their packet headers are looked at.
//!
//! The `mysql` crate still opens the connection (handshake, authentication, TLS, database)
//! and prepares the statements; a [`Wire`] then works on a duplicate of the connection's
//! socket descriptor. Both can be used in turn on one connection because every command's
//! answer is read to its end before the next command is sent (the crate's buffered reader
//! is empty between commands, and so is this one's, which [`Wire`] checks). Not used over
//! TLS (the socket carries TLS records) — the caller keeps the crate's path then.
//!
//! Assumes the capabilities the `mysql` crate (28) negotiates: protocol 4.1, no
//! compression, no `CLIENT_DEPRECATE_EOF` (so an EOF packet follows the column definitions
//! and ends the rows); MariaDB's `MARIADB_CLIENT_CACHE_METADATA` is recognised by the
//! metadata flag byte after the column count.

use std::io::{self, Read, Write};

use mysql::{DriverError, Error, MySqlError};
use mysql_common::constants::{ColumnType, Command};

/// Payload length of a packet that continues in the next one.
const MAX_PAYLOAD: usize = 0xff_ffff;
/// Initial size of the receive buffer: a read-only transaction's largest answer (100 rows
/// of ~125 bytes) fits in a few reads.
const RECV_BUF: usize = 64 * 1024;

/// One connection's command writer and result reader on a byte stream (the socket; a fake
/// in the tests).
pub(crate) struct Wire<S> {
    sock: S,
    /// The command being sent, header included (reused: no allocation per query).
    out: Vec<u8>,
    /// Bytes received; `buf[start..end]` not yet consumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The sequence id the next packet must carry.
    seq: u8,
}

/// Where [`Wire::packet`]'s payload is in the buffer (valid until the next read).
#[derive(Debug, Clone, Copy)]
struct Packet {
    at: usize,
    len: usize,
}

impl Wire<std::fs::File> {
    /// A wire on a duplicate of `conn`'s socket (which keeps its timeouts: they are the
    /// socket's options).
    pub(crate) fn over(conn: &mysql::Conn) -> io::Result<Self> {
        use std::os::fd::{AsRawFd, BorrowedFd};
        // SAFETY: the descriptor is `conn`'s open socket for the duration of this call; it
        // is only duplicated here, and the duplicate is owned by the returned `File`.
        let fd = unsafe { BorrowedFd::borrow_raw(conn.as_raw_fd()) }.try_clone_to_owned()?;
        Ok(Wire::new(std::fs::File::from(fd)))
    }
}

impl<S: Read + Write> Wire<S> {
    pub(crate) fn new(sock: S) -> Self {
        Wire {
            sock,
            out: Vec::with_capacity(64),
            buf: vec![0; RECV_BUF],
            start: 0,
            end: 0,
            seq: 0,
        }
    }

    /// Executes the prepared statement `stmt` with unsigned 32-bit `params`; the number of
    /// rows it returned (read and skipped).
    pub(crate) fn execute(&mut self, stmt: u32, params: &[u32]) -> Result<u64, Error> {
        self.begin(Command::COM_STMT_EXECUTE)?;
        self.out.extend_from_slice(&stmt.to_le_bytes());
        // no cursor, one iteration
        self.out.push(0);
        self.out.extend_from_slice(&1u32.to_le_bytes());
        if !params.is_empty() {
            // NULL bitmap (none), then the types (bound each time, as the crate does)
            self.out
                .extend(std::iter::repeat_n(0, params.len().div_ceil(8)));
            self.out.push(1);
            for _ in params {
                self.out
                    .extend_from_slice(&[ColumnType::MYSQL_TYPE_LONG as u8, 0x80]);
            }
            for p in params {
                self.out.extend_from_slice(&p.to_le_bytes());
            }
        }
        self.send()?;
        self.result()
    }

    /// Sends `sql` as a text query; the number of rows it returned (read and skipped).
    pub(crate) fn query(&mut self, sql: &str) -> Result<u64, Error> {
        self.begin(Command::COM_QUERY)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        self.result()
    }

    fn begin(&mut self, cmd: Command) -> Result<(), Error> {
        if self.start != self.end {
            // bytes nobody asked for: this path and the server disagree on the protocol
            return Err(Error::DriverError(DriverError::PacketOutOfSync));
        }
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, 0, cmd as u8]);
        Ok(())
    }

    /// Fills in the header and writes the command (commands here are far below 16 MiB).
    fn send(&mut self) -> Result<(), Error> {
        let len = self.out.len() - 4;
        debug_assert!(len < MAX_PAYLOAD);
        self.out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        self.out[3] = 0;
        self.seq = 1;
        self.sock.write_all(&self.out)?;
        Ok(())
    }

    /// Reads an answer to its end: an OK packet (0 rows), a result set (its rows counted),
    /// or the server's error.
    fn result(&mut self) -> Result<u64, Error> {
        let p = self.packet()?;
        match self.buf[p.at] {
            0x00 => return Ok(0),
            0xff => return Err(self.server_error(p)),
            // a LOCAL INFILE request: no statement of this path sends one
            0xfb => return Err(Error::DriverError(DriverError::UnexpectedPacket)),
            _ => {}
        }
        let head = &self.buf[p.at..p.at + p.len];
        let (columns, used) = lenenc(head).ok_or(DriverError::UnexpectedPacket)?;
        // MariaDB's cached metadata: a flag byte after the count, 0 = definitions not sent
        let definitions = head.get(used) != Some(&0);
        if definitions {
            for _ in 0..columns {
                self.packet()?;
            }
        }
        // the EOF after the column definitions
        let p = self.packet()?;
        if !self.is_eof(p) {
            return Err(Error::DriverError(DriverError::UnexpectedPacket));
        }
        let mut rows = 0;
        loop {
            let p = self.packet()?;
            if self.is_eof(p) {
                return Ok(rows);
            }
            // a row never starts with 0xff (binary rows start with 0x00, a text row's first
            // length-encoded value cannot), so this is an error that ends the result set
            if self.buf[p.at] == 0xff && p.len < MAX_PAYLOAD {
                return Err(self.server_error(p));
            }
            rows += 1;
        }
    }

    fn is_eof(&self, p: Packet) -> bool {
        self.buf[p.at] == 0xfe && p.len < 9
    }

    /// The server's error in the ERR packet at `p`.
    fn server_error(&self, p: Packet) -> Error {
        let e = &self.buf[p.at..p.at + p.len];
        let code = u16::from_le_bytes([e[1], e[2]]);
        let (state, message) = if e.get(3) == Some(&b'#') && e.len() >= 9 {
            (&e[4..9], &e[9..])
        } else {
            (&b"HY000"[..], &e[3..])
        };
        Error::MySqlError(MySqlError {
            state: String::from_utf8_lossy(state).into_owned(),
            message: String::from_utf8_lossy(message).into_owned(),
            code,
        })
    }

    /// The next packet, whole in the buffer, skipping MariaDB's progress reports. Its
    /// payload is never empty. A packet of 16 MiB or more (continued in the next) is an
    /// error: no statement of this path returns one (its rows are below 300 bytes).
    fn packet(&mut self) -> Result<Packet, Error> {
        loop {
            let p = self.chunk()?;
            if p.len >= MAX_PAYLOAD {
                return Err(Error::DriverError(DriverError::PacketTooLarge));
            }
            if p.len == 0 {
                return Err(Error::DriverError(DriverError::UnexpectedPacket));
            }
            let b = &self.buf[p.at..p.at + p.len];
            // an ERR packet with code 0xffff is a MariaDB progress report, not an answer
            if b[0] == 0xff && b.len() >= 3 && b[1] == 0xff && b[2] == 0xff {
                continue;
            }
            return Ok(p);
        }
    }

    /// One packet's payload, read into the buffer as needed; its sequence id checked.
    fn chunk(&mut self) -> Result<Packet, Error> {
        self.fill(4)?;
        let h = &self.buf[self.start..self.start + 4];
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        if h[3] != self.seq {
            return Err(Error::DriverError(DriverError::PacketOutOfSync));
        }
        self.seq = self.seq.wrapping_add(1);
        self.fill(4 + len)?;
        let at = self.start + 4;
        self.start = at + len;
        Ok(Packet { at, len })
    }

    /// Makes `buf[start..]` hold at least `need` bytes, reading as much as the socket has
    /// (one read usually brings a whole answer).
    fn fill(&mut self, need: usize) -> Result<(), Error> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        while self.end - self.start < need {
            if self.buf.len() - self.start < need {
                // too little room after `start`: move the unread bytes to the front, and
                // grow the buffer if a single packet needs it
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.buf.len() < need {
                    self.buf.resize(need.next_power_of_two(), 0);
                }
            }
            let n = loop {
                match self.sock.read(&mut self.buf[self.end..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            if n == 0 {
                return Err(Error::server_disconnected());
            }
            self.end += n;
        }
        Ok(())
    }
}

/// A length-encoded integer at the start of `b`, and the bytes it took.
fn lenenc(b: &[u8]) -> Option<(u64, usize)> {
    let n = |k: usize| -> Option<(u64, usize)> {
        let bytes = b.get(1..1 + k)?;
        let mut v = [0u8; 8];
        v[..k].copy_from_slice(bytes);
        Some((u64::from_le_bytes(v), 1 + k))
    };
    match *b.first()? {
        x @ 0..=0xfa => Some((x as u64, 1)),
        0xfc => n(2),
        0xfd => n(3),
        0xfe => n(8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ErrorKind;
    use crate::oltp::classify;

    /// A server's side of the stream: the answers to the commands in turn, each sent once
    /// its command is written and handed out `step` bytes per read; what the client wrote.
    struct Fake {
        later: Vec<Vec<u8>>,
        answer: Vec<u8>,
        pos: usize,
        step: usize,
        written: Vec<u8>,
    }

    impl Read for Fake {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(b.len()).min(self.answer.len() - self.pos);
            b[..n].copy_from_slice(&self.answer[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    impl Write for Fake {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if !self.later.is_empty() {
                self.answer.extend(self.later.remove(0));
            }
            self.written.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Packets with sequence ids from 1 (the answer to a command).
    fn answer(payloads: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            v.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            v.push(i as u8 + 1);
            v.extend_from_slice(p);
        }
        v
    }

    fn wire(answer: Vec<u8>, step: usize) -> Wire<Fake> {
        wire_n(vec![answer], step)
    }

    fn wire_n(answers: Vec<Vec<u8>>, step: usize) -> Wire<Fake> {
        Wire::new(Fake {
            later: answers,
            answer: Vec::new(),
            pos: 0,
            step,
            written: Vec::new(),
        })
    }

    const EOF: &[u8] = &[0xfe, 0, 0, 0x02, 0];
    const ROW: &[u8] = b"\x00\x0512345";

    #[test]
    fn execute_writes_the_binary_protocol_and_counts_the_rows() {
        // MariaDB with cached metadata: the count, flag 0 (no definitions), EOF, rows, EOF
        for step in [1, 3, 4096] {
            let mut w = wire(answer(&[&[1, 0], EOF, ROW, ROW, ROW, EOF]), step);
            assert_eq!(w.execute(7, &[42, 0x0102_0304]).unwrap(), 3, "step {step}");
            let mut want = vec![0x17];
            want.extend_from_slice(&7u32.to_le_bytes());
            want.push(0);
            want.extend_from_slice(&1u32.to_le_bytes());
            want.extend_from_slice(&[0, 1, 0x03, 0x80, 0x03, 0x80]);
            want.extend_from_slice(&42u32.to_le_bytes());
            want.extend_from_slice(&[4, 3, 2, 1]);
            let mut framed = (want.len() as u32).to_le_bytes()[..3].to_vec();
            framed.push(0);
            framed.extend_from_slice(&want);
            assert_eq!(w.sock.written, framed);
            assert_eq!(w.sock.pos, w.sock.answer.len(), "read to the end");
        }
    }

    #[test]
    fn column_definitions_are_skipped_when_sent() {
        let def: &[u8] = b"\x03def\x06sbtest\x07sbtest1\x07sbtest1\x01c\x01c\x0c";
        // no metadata flag (MySQL, or MariaDB without the extension)
        let mut w = wire(answer(&[&[1], def, EOF, ROW, EOF]), 5);
        assert_eq!(w.execute(1, &[9]).unwrap(), 1);
        // MariaDB's flag 1: definitions follow
        let mut w = wire(answer(&[&[2, 1], def, def, EOF, EOF]), 5);
        assert_eq!(w.execute(1, &[9]).unwrap(), 0);
    }

    #[test]
    fn ok_answers_a_text_query() {
        let mut w = wire(answer(&[&[0, 0, 0, 0x03, 0, 0, 0]]), 64);
        assert_eq!(w.query("BEGIN").unwrap(), 0);
        assert_eq!(w.sock.written, b"\x06\x00\x00\x00\x03BEGIN");
        // a text result set is read the same way
        let text_row: &[u8] = b"\x05hello";
        let mut w = wire(answer(&[&[1, 0], EOF, text_row, text_row, EOF]), 64);
        assert_eq!(w.query("SELECT c FROM sbtest1 WHERE id=1").unwrap(), 2);
    }

    fn err(code: u16, state: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut e = vec![0xff];
        e.extend_from_slice(&code.to_le_bytes());
        e.push(b'#');
        e.extend_from_slice(state);
        e.extend_from_slice(msg);
        e
    }

    #[test]
    fn server_errors_keep_code_state_and_message() {
        let deadlock = err(1213, b"40001", b"Deadlock found");
        let mut w = wire(answer(&[&deadlock]), 2);
        let e = w.execute(3, &[1]).unwrap_err();
        match &e {
            Error::MySqlError(m) => {
                assert_eq!(
                    (m.code, &m.state[..], &m.message[..]),
                    (1213, "40001", "Deadlock found")
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(classify(&e), Some(ErrorKind::Deadlock));
        // an error in the middle of the rows ends the result set; the wire is usable after
        let killed = err(1927, b"70100", b"Connection was killed");
        let a = answer(&[&[1, 0], EOF, ROW, &killed]);
        let mut w = wire_n(vec![a, answer(&[&[0, 0, 0, 0, 0, 0, 0]])], 4096);
        let e = w.execute(3, &[1]).unwrap_err();
        assert_eq!(classify(&e), Some(ErrorKind::LostConnection), "{e}");
        assert_eq!(w.query("COMMIT").unwrap(), 0);
    }

    #[test]
    fn progress_reports_are_skipped() {
        let progress: &[u8] = &[0xff, 0xff, 0xff, 1, 1, 1, 0, 0, 0, 0];
        let mut w = wire(answer(&[progress, &[0, 0, 0, 0, 0, 0, 0]]), 4096);
        assert_eq!(w.query("COMMIT").unwrap(), 0);
    }

    #[test]
    fn a_packet_larger_than_the_buffer_grows_it() {
        let mut big = vec![0u8; RECV_BUF * 2 + 17];
        big[1] = 0xfc;
        let mut w = wire(answer(&[&[1, 0], EOF, &big, ROW, EOF]), 10_000);
        assert_eq!(w.execute(1, &[1]).unwrap(), 2);
    }

    #[test]
    fn broken_streams_are_errors() {
        // the server hung up mid-answer: a lost connection
        let mut a = answer(&[&[1, 0], EOF, ROW]);
        a.truncate(a.len() - 2);
        let e = wire(a, 64).execute(1, &[1]).unwrap_err();
        assert_eq!(classify(&e), Some(ErrorKind::LostConnection), "{e}");
        // a wrong sequence id
        let mut a = answer(&[&[0, 0, 0, 0, 0, 0, 0]]);
        a[3] = 5;
        let e = wire(a, 64).query("BEGIN").unwrap_err();
        assert!(
            matches!(e, Error::DriverError(DriverError::PacketOutOfSync)),
            "{e}"
        );
        // bytes after the answer: the next command refuses to start
        let mut a = answer(&[&[0, 0, 0, 0, 0, 0, 0]]);
        a.extend_from_slice(&[1, 0, 0, 2, 0]);
        let mut w = wire(a, 4096);
        assert_eq!(w.query("BEGIN").unwrap(), 0);
        let e = w.query("COMMIT").unwrap_err();
        assert!(
            matches!(e, Error::DriverError(DriverError::PacketOutOfSync)),
            "{e}"
        );
        // a result set whose column count is not followed by an EOF
        let e = wire(answer(&[&[1, 0], ROW]), 64)
            .execute(1, &[1])
            .unwrap_err();
        assert!(
            matches!(e, Error::DriverError(DriverError::UnexpectedPacket)),
            "{e}"
        );
    }

    #[test]
    fn length_encoded_integers() {
        assert_eq!(lenenc(&[0xfa]), Some((250, 1)));
        assert_eq!(lenenc(&[0xfc, 0x01, 0x02]), Some((0x0201, 3)));
        assert_eq!(lenenc(&[0xfd, 1, 2, 3]), Some((0x030201, 4)));
        assert_eq!(
            lenenc(&[0xfe, 1, 0, 0, 0, 0, 0, 0, 1]),
            Some((1 | 1 << 56, 9))
        );
        assert_eq!(lenenc(&[0xfc, 1]), None);
        assert_eq!(lenenc(&[0xfb]), None);
        assert_eq!(lenenc(&[]), None);
    }
}
