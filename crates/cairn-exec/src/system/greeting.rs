//! The MySQL client/server protocol's greeting (the first packet a MariaDB or MySQL server
//! sends): how a runtime tells, without a client program, that a server listens.

use std::io::{Read, Write};

/// A connection a greeting is exchanged on (TCP or a unix socket).
pub trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// The reading half of a [`Stream`], for [`crate::system::DbSystem::read_greeting`].
pub struct Reader<'a>(pub &'a mut dyn Stream);

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

/// The first packet a server sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Greeting {
    /// A handshake with the server version.
    Handshake { version: String },
    /// An error packet instead (e.g. 1130 "Host … is not allowed to connect"): the server is up
    /// but refuses this client.
    Error { code: u16, message: String },
}

/// Read a MySQL protocol greeting; `Err(text)` if there is none or it is not one.
pub fn read_mysql_greeting(r: &mut dyn Read) -> Result<Greeting, String> {
    let mut head = [0u8; 4];
    r.read_exact(&mut head)
        .map_err(|e| format!("no greeting: {e}"))?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
    if len == 0 || len > 1 << 16 {
        return Err(format!("implausible greeting length {len}"));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)
        .map_err(|e| format!("short greeting: {e}"))?;
    match payload[0] {
        10 => {
            let end = payload[1..]
                .iter()
                .position(|&b| b == 0)
                .map_or(payload.len(), |p| p + 1);
            Ok(Greeting::Handshake {
                version: String::from_utf8_lossy(&payload[1..end]).into_owned(),
            })
        }
        0xff if payload.len() >= 3 => Ok(Greeting::Error {
            code: u16::from_le_bytes([payload[1], payload[2]]),
            message: String::from_utf8_lossy(&payload[3..]).into_owned(),
        }),
        p => Err(format!("unexpected protocol byte {p}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting_parsing() {
        let mut pkt = vec![0u8; 4];
        let payload = b"\x0a11.8.2-MariaDB\0rest";
        pkt[0] = payload.len() as u8;
        pkt.extend_from_slice(payload);
        assert_eq!(
            read_mysql_greeting(&mut pkt.as_slice()).unwrap(),
            Greeting::Handshake {
                version: "11.8.2-MariaDB".into()
            }
        );
        let mut err = vec![0u8; 4];
        let payload = b"\xff\x6a\x04Host 'x' is not allowed";
        err[0] = payload.len() as u8;
        err.extend_from_slice(payload);
        let e = read_mysql_greeting(&mut err.as_slice()).unwrap();
        assert!(
            matches!(e, Greeting::Error { code: 1130, ref message } if message.contains("not allowed")),
            "{e:?}"
        );
        assert!(read_mysql_greeting(&mut &b"\x01"[..]).is_err());
    }
}
