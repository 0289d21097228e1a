//! What an ELF binary is, read from its headers: word size, static or dynamic linking,
//! stripped or not, debug information or not — the evidence a source build's flags took effect.
//!
//! Only the ELF header, the program headers and the section headers (with their names) are
//! read; nothing is executed. Both classes (32/64-bit) and both byte orders are understood.

use serde::{Deserialize, Serialize};

/// The facts of one ELF file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElfFacts {
    /// 32 or 64.
    pub word_size: u8,
    /// `executable`, `shared` (a library or a position-independent executable), `relocatable`, `other`.
    pub file_type: String,
    /// True if it names a program interpreter (`PT_INTERP`): the dynamic loader runs it.
    pub dynamic: bool,
    /// The interpreter it names, if any (e.g. `/lib64/ld-linux-x86-64.so.2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// True if it has no symbol table (`.symtab`).
    pub stripped: bool,
    /// True if it has DWARF debug information (`.debug_info`).
    pub debug_info: bool,
}

/// Why bytes are not an ELF file this module can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a readable ELF file: {0}")]
pub struct NotElf(pub String);

/// True if `bytes` start with the ELF magic.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

struct Reader<'a> {
    b: &'a [u8],
    le: bool,
    wide: bool,
}

impl Reader<'_> {
    fn bytes(&self, at: usize, n: usize) -> Result<&[u8], NotElf> {
        at.checked_add(n)
            .and_then(|end| self.b.get(at..end))
            .ok_or_else(|| NotElf(format!("truncated at byte {at}")))
    }
    fn u16(&self, at: usize) -> Result<u64, NotElf> {
        let s: [u8; 2] = self.bytes(at, 2)?.try_into().expect("2 bytes");
        Ok(if self.le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        } as u64)
    }
    fn u32(&self, at: usize) -> Result<u64, NotElf> {
        let s: [u8; 4] = self.bytes(at, 4)?.try_into().expect("4 bytes");
        Ok(if self.le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        } as u64)
    }
    fn u64(&self, at: usize) -> Result<u64, NotElf> {
        let s: [u8; 8] = self.bytes(at, 8)?.try_into().expect("8 bytes");
        Ok(if self.le {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    }
    /// An address-sized field (`Elf32_Addr`/`Elf64_Off`, …).
    fn word(&self, at: usize) -> Result<u64, NotElf> {
        if self.wide {
            self.u64(at)
        } else {
            self.u32(at)
        }
    }
}

fn usize_of(v: u64) -> Result<usize, NotElf> {
    usize::try_from(v).map_err(|_| NotElf(format!("offset {v} out of range")))
}

const PT_INTERP: u64 = 3;

/// Read the facts of the ELF file `bytes`.
pub fn inspect(bytes: &[u8]) -> Result<ElfFacts, NotElf> {
    if !is_elf(bytes) {
        return Err(NotElf("no ELF magic".into()));
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        c => return Err(NotElf(format!("unknown ELF class {c:?}"))),
    };
    let le = match bytes.get(5) {
        Some(1) => true,
        Some(2) => false,
        d => return Err(NotElf(format!("unknown ELF data encoding {d:?}"))),
    };
    let r = Reader { b: bytes, le, wide };
    let file_type = match r.u16(16)? {
        1 => "relocatable",
        2 => "executable",
        3 => "shared",
        _ => "other",
    }
    .to_string();
    // header field offsets differ between the classes
    let (phoff, shoff, at_sizes) = if wide {
        (r.u64(32)?, r.u64(40)?, 54)
    } else {
        (r.u32(28)?, r.u32(32)?, 42)
    };
    let phentsize = r.u16(at_sizes)?;
    let phnum = r.u16(at_sizes + 2)?;
    let shentsize = r.u16(at_sizes + 4)?;
    let shnum = r.u16(at_sizes + 6)?;
    let shstrndx = r.u16(at_sizes + 8)?;

    let mut interpreter = None;
    for i in 0..phnum {
        let ph = usize_of(phoff + i * phentsize)?;
        if r.u32(ph)? != PT_INTERP {
            continue;
        }
        // p_offset and p_filesz sit at different places in the two classes
        let (off, size) = if wide {
            (r.u64(ph + 8)?, r.u64(ph + 32)?)
        } else {
            (r.u32(ph + 4)?, r.u32(ph + 16)?)
        };
        let raw = r.bytes(usize_of(off)?, usize_of(size)?)?;
        let s = raw.split(|&c| c == 0).next().unwrap_or_default();
        interpreter = Some(String::from_utf8_lossy(s).into_owned());
    }

    let mut names = Vec::new();
    if shoff != 0 && shnum != 0 {
        // section header: sh_name at 0; sh_offset at 16 (64-bit 24)
        let sh = |i: u64| usize_of(shoff + i * shentsize);
        let off_at = if wide { 24 } else { 16 };
        let strtab = sh(shstrndx)?;
        let str_off = usize_of(r.word(strtab + off_at)?)?;
        for i in 0..shnum {
            let h = sh(i)?;
            let name_off = usize_of(r.u32(h)?)?;
            let start = str_off
                .checked_add(name_off)
                .filter(|&s| s < bytes.len())
                .ok_or_else(|| NotElf("section name out of range".into()))?;
            let name = bytes[start..].split(|&c| c == 0).next().unwrap_or_default();
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    let has = |n: &str| names.iter().any(|s| s == n);
    Ok(ElfFacts {
        word_size: if wide { 64 } else { 32 },
        file_type,
        dynamic: interpreter.is_some(),
        interpreter,
        stripped: !has(".symtab"),
        debug_info: has(".debug_info"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_binary_itself() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let f = inspect(&exe).unwrap();
        assert_eq!(f.word_size as usize, std::mem::size_of::<usize>() * 8);
        // a Rust test binary is linked dynamically against libc and keeps its symbols
        assert!(f.dynamic, "{f:?}");
        assert!(!f.stripped, "{f:?}");
    }

    #[test]
    fn garbage_is_refused_not_a_panic() {
        assert!(inspect(b"hello").is_err());
        assert!(inspect(b"\x7fELF\x02\x01").is_err());
        let mut b = b"\x7fELF\x02\x01\x01".to_vec();
        b.resize(64, 0xff);
        assert!(inspect(&b).is_err());
    }
}
