//! Which errors a run survives (deadlock, lock wait timeout, a changed record, a lost connection) and which end it.
//!
//! sysbench 1.0 ignores 1213, 1020 and 1205 by default (`--mysql-ignore-errors`) and restarts
//! the event, reconnecting after 2013/2055 ("lost connection"); here the same errors are
//! counted and the event retried, at most `max_retries` times in a row. Anything else — a
//! duplicate key (1062) included, as in sysbench — ends the run.

use mysql::{DriverError, Error};
use mysql_common::proto::codec::error::PacketCodecError;

use crate::metrics::ErrorKind;

/// ER_LOCK_DEADLOCK
pub const ER_LOCK_DEADLOCK: u16 = 1213;
/// ER_LOCK_WAIT_TIMEOUT
pub const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// ER_CHECKREAD ("Record has changed since last read"): MariaDB's write conflict under
/// `innodb_snapshot_isolation` (on by default from 11.6).
pub const ER_CHECKREAD: u16 = 1020;
/// ER_SERVER_SHUTDOWN ("Server shutdown in progress")
pub const ER_SERVER_SHUTDOWN: u16 = 1053;
/// ER_CONNECTION_KILLED (MariaDB)
pub const ER_CONNECTION_KILLED: u16 = 1927;
/// CR_SERVER_GONE_ERROR / CR_SERVER_LOST, should a server send them
const CR_CODES: [u16; 2] = [2006, 2013];

/// `Some(kind)` for an error to count and retry after, `None` for one that ends the run.
pub fn classify(e: &Error) -> Option<ErrorKind> {
    match e {
        Error::MySqlError(m) => match m.code {
            ER_LOCK_DEADLOCK => Some(ErrorKind::Deadlock),
            ER_LOCK_WAIT_TIMEOUT => Some(ErrorKind::LockWaitTimeout),
            ER_CHECKREAD => Some(ErrorKind::RecordChanged),
            ER_SERVER_SHUTDOWN | ER_CONNECTION_KILLED => Some(ErrorKind::LostConnection),
            c if CR_CODES.contains(&c) => Some(ErrorKind::LostConnection),
            _ => None,
        },
        // the server did not answer within the target's I/O timeout: it hangs, and a
        // reconnection would only wait again — the run fails
        Error::IoError(io) | Error::CodecError(PacketCodecError::Io(io)) if timed_out(io) => None,
        Error::IoError(_) | Error::CodecError(_) => Some(ErrorKind::LostConnection),
        Error::DriverError(
            DriverError::ConnectTimeout
            | DriverError::CouldNotConnect(_)
            | DriverError::PacketOutOfSync
            | DriverError::UnexpectedPacket
            | DriverError::Timeout,
        ) => Some(ErrorKind::LostConnection),
        _ => None,
    }
}

/// Whether `e` is a read or write that got no answer within the connection's I/O timeout.
pub fn is_timeout(e: &Error) -> bool {
    match e {
        Error::IoError(io) | Error::CodecError(PacketCodecError::Io(io)) => timed_out(io),
        _ => false,
    }
}

/// An I/O error that means "no answer within the socket's timeout" (`EAGAIN` on a socket
/// with `SO_RCVTIMEO`, or `ETIMEDOUT`).
fn timed_out(io: &std::io::Error) -> bool {
    matches!(
        io.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: u16) -> Error {
        Error::MySqlError(mysql::MySqlError {
            state: "HY000".into(),
            message: "x".into(),
            code,
        })
    }

    #[test]
    fn kinds() {
        assert_eq!(classify(&server(1213)), Some(ErrorKind::Deadlock));
        assert_eq!(classify(&server(1205)), Some(ErrorKind::LockWaitTimeout));
        assert_eq!(classify(&server(1020)), Some(ErrorKind::RecordChanged));
        assert_eq!(
            classify(&server(1062)),
            None,
            "a duplicate key ends the run"
        );
        assert_eq!(classify(&server(1927)), Some(ErrorKind::LostConnection));
        assert_eq!(classify(&server(1146)), None, "no such table ends the run");
        let io = Error::IoError(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(classify(&io), Some(ErrorKind::LostConnection));
        let hung = Error::IoError(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "Resource temporarily unavailable",
        ));
        assert_eq!(classify(&hung), None, "a timeout ends the run");
        let hung = Error::CodecError(PacketCodecError::Io(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "Resource temporarily unavailable",
        )));
        assert_eq!(classify(&hung), None, "also inside the packet codec");
        assert_eq!(
            classify(&Error::DriverError(DriverError::MixedParams)),
            None
        );
    }
}
