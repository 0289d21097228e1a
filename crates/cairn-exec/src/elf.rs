//! What an ELF binary is, read from its headers: word size, static or dynamic linking,
//! stripped or not, debug information or not — the evidence a source build's flags took effect —
//! and the libraries it needs (`DT_NEEDED`: which allocator a server links by itself).
//!
//! Only the ELF header, the program headers, the section headers (with their names) and the
//! dynamic section are read; nothing is executed. Both classes (32/64-bit) and both byte orders
//! are understood; a damaged file is an error, never a panic.

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

/// `base + i * size + field`: the offset of a field of the `i`th table entry, an error (not an
/// overflow) where a damaged header would put it past the address space.
fn entry_at(base: u64, i: u64, size: u64, field: u64) -> Result<usize, NotElf> {
    i.checked_mul(size)
        .and_then(|o| o.checked_add(base))
        .and_then(|o| o.checked_add(field))
        .ok_or_else(|| {
            NotElf(format!(
                "entry {i} of the table at byte {base} out of range"
            ))
        })
        .and_then(usize_of)
}

const PT_LOAD: u64 = 1;
const PT_DYNAMIC: u64 = 2;
const PT_INTERP: u64 = 3;

/// The word size (32 or 64) from an ELF file's first bytes (its class byte), `None` if they
/// are not an ELF header.
pub fn word_size(head: &[u8]) -> Option<u8> {
    if !is_elf(head) {
        return None;
    }
    match head.get(4) {
        Some(1) => Some(32),
        Some(2) => Some(64),
        _ => None,
    }
}

/// One program header: its type, where its bytes are in the file, where it is loaded, and
/// how many bytes the file holds of it.
struct Segment {
    kind: u64,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// The ELF header's fields this module uses.
struct Header<'a> {
    r: Reader<'a>,
    file_type: &'static str,
    segments: Vec<Segment>,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
    shstrndx: u64,
}

impl<'a> Header<'a> {
    fn read(bytes: &'a [u8]) -> Result<Header<'a>, NotElf> {
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
        };
        // header field offsets differ between the classes
        let (phoff, shoff, at_sizes) = if wide {
            (r.u64(32)?, r.u64(40)?, 54)
        } else {
            (r.u32(28)?, r.u32(32)?, 42)
        };
        let phentsize = r.u16(at_sizes)?;
        let phnum = r.u16(at_sizes + 2)?;
        let mut segments = Vec::new();
        for i in 0..phnum {
            let ph = |field| entry_at(phoff, i, phentsize, field);
            // p_offset, p_vaddr and p_filesz sit at different places in the two classes
            let (offset, vaddr, filesz) = if wide {
                (r.u64(ph(8)?)?, r.u64(ph(16)?)?, r.u64(ph(32)?)?)
            } else {
                (r.u32(ph(4)?)?, r.u32(ph(8)?)?, r.u32(ph(16)?)?)
            };
            segments.push(Segment {
                kind: r.u32(ph(0)?)?,
                offset,
                vaddr,
                filesz,
            });
        }
        Ok(Header {
            file_type,
            segments,
            shoff,
            shentsize: r.u16(at_sizes + 4)?,
            shnum: r.u16(at_sizes + 6)?,
            shstrndx: r.u16(at_sizes + 8)?,
            r,
        })
    }

    /// The NUL-ended string at file offset `at`.
    fn string_at(&self, at: u64) -> Result<String, NotElf> {
        let start = usize_of(at)?;
        let rest = self
            .r
            .b
            .get(start..)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| NotElf(format!("string at byte {at} out of range")))?;
        let s = rest.split(|&c| c == 0).next().unwrap_or_default();
        Ok(String::from_utf8_lossy(s).into_owned())
    }
}

/// The libraries the ELF file `bytes` needs (`DT_NEEDED` of its dynamic section), by name
/// (e.g. `libtcmalloc.so.4`); none for a static binary.
pub fn needed(bytes: &[u8]) -> Result<Vec<String>, NotElf> {
    let h = Header::read(bytes)?;
    let Some(dynamic) = h.segments.iter().find(|s| s.kind == PT_DYNAMIC) else {
        return Ok(Vec::new());
    };
    let entry = if h.r.wide { 16 } else { 8 };
    let (mut wanted, mut strtab) = (Vec::new(), None);
    for i in 0..dynamic.filesz / entry {
        let e = |field| entry_at(dynamic.offset, i, entry, field);
        let (tag, val) = (h.r.word(e(0)?)?, h.r.word(e(entry / 2)?)?);
        match tag {
            0 => break,
            1 => wanted.push(val),
            5 => strtab = Some(val),
            _ => {}
        }
    }
    let Some(strtab) = strtab else {
        return Ok(Vec::new());
    };
    // DT_STRTAB is an address: its file offset is in the loaded segment that holds it
    let Some(load) = h.segments.iter().find(|s| {
        s.kind == PT_LOAD && s.vaddr <= strtab && strtab < s.vaddr.saturating_add(s.filesz)
    }) else {
        return Err(NotElf(format!(
            "the string table at address {strtab:#x} is in no loaded segment"
        )));
    };
    let base = (strtab - load.vaddr).saturating_add(load.offset);
    wanted
        .into_iter()
        .map(|n| h.string_at(base.saturating_add(n)))
        .collect()
}

/// Read the facts of the ELF file `bytes`.
pub fn inspect(bytes: &[u8]) -> Result<ElfFacts, NotElf> {
    let h = Header::read(bytes)?;
    let r = &h.r;
    let wide = r.wide;
    let mut interpreter = None;
    for s in h.segments.iter().filter(|s| s.kind == PT_INTERP) {
        let raw = r.bytes(usize_of(s.offset)?, usize_of(s.filesz)?)?;
        let s = raw.split(|&c| c == 0).next().unwrap_or_default();
        interpreter = Some(String::from_utf8_lossy(s).into_owned());
    }
    let (shoff, shnum, shentsize, shstrndx) = (h.shoff, h.shnum, h.shentsize, h.shstrndx);
    let file_type = h.file_type.to_string();

    let mut names = Vec::new();
    if shoff != 0 && shnum != 0 {
        // section header: sh_name at 0; sh_offset at 16 (64-bit 24)
        let sh = |i: u64, field: u64| entry_at(shoff, i, shentsize, field);
        let off_at = if wide { 24 } else { 16 };
        let str_off = usize_of(r.word(sh(shstrndx, off_at)?)?)?;
        for i in 0..shnum {
            let name_off = usize_of(r.u32(sh(i, 0)?)?)?;
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
    fn the_test_binary_needs_the_c_library() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let needed = needed(&exe).unwrap();
        assert!(
            needed.iter().any(|n| n.starts_with("libc.so")),
            "{needed:?}"
        );
        assert_eq!(word_size(&exe), Some((usize::BITS) as u8));
    }

    #[test]
    fn word_sizes_from_the_class_byte() {
        assert_eq!(word_size(b"\x7fELF\x02\x01"), Some(64));
        assert_eq!(word_size(b"\x7fELF\x01"), Some(32));
        assert_eq!(word_size(b"\x7fELF\x03"), None);
        assert_eq!(word_size(b"#!/bin"), None);
    }

    #[test]
    fn a_cut_or_scrambled_binary_is_an_error_never_a_panic() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        for len in [0, 5, 63, 64, 200] {
            let cut = &exe[..len.min(exe.len())];
            assert!(needed(cut).is_err(), "{len}");
            assert!(inspect(cut).is_err(), "{len}");
        }
        // every header byte set to 0xff in turn: offsets and counts out of any range
        for at in 6..64 {
            let mut b = exe[..4096].to_vec();
            b[at] = 0xff;
            let _ = needed(&b);
            let _ = inspect(&b);
        }
    }

    #[test]
    fn garbage_is_refused_not_a_panic() {
        assert!(needed(b"hello").is_err());
        assert!(inspect(b"hello").is_err());
        assert!(inspect(b"\x7fELF\x02\x01").is_err());
        let mut b = b"\x7fELF\x02\x01\x01".to_vec();
        b.resize(64, 0xff);
        assert!(inspect(&b).is_err());
    }
}
