//! Writes serialized JSON as the inside of a JSON string: a backslash before every `"` and `\`
//! ([`push_escaped`]); and, reading, finds where a string that needs no unescaping ends
//! ([`unescaped_length`], for the MCP front end's one-pass read of a message).
//! Serialized JSON holds no raw control characters (serializers write them escaped), so these two
//! bytes are all that a JSON string around it needs escaped.
//!
//! The MCP front end writes every tool answer twice (MCP 2025-11-25: as `structuredContent` and
//! as the same JSON in a text block), so this runs on every `tools/call`, over a few KiB with a
//! quote every ten bytes or so. On x86-64 with SSSE3 it works 16 bytes at a time (2.3
//! instructions per byte of an order, counted by cachegrind, against 9 for the portable loop of
//! 8-byte words that other CPUs run):
//! a 16-bit mask of the block's quotes, and for each half of the block one byte shuffle from a
//! table of the 256 ways to spread 8 bytes around their backslashes.
//!
//! This is the one crate of the workspace that allows `unsafe` (the workspace denies it and every
//! service crate forbids it), in its `ssse3` module only: its unaligned 16-byte loads and stores, the call
//! into it once the CPU is known to have SSSE3, and the output's length set over the bytes it
//! wrote. Each block says why it is sound. The tests hold both paths to a plain byte loop on all
//! 65,536 quote patterns of a block and on random text of every length up to 300 bytes.

/// Spare capacity [`push_escaped`] needs for a text of `length` bytes: the worst case (every byte
/// a quote) and one block of 16 bytes that either path may write past the end of what it keeps. A caller that reserves the sum for all its texts at once allocates once.
pub const fn room_for(length: usize) -> usize {
    2 * length + BLOCK
}

/// Bytes the fast path reads and writes at once.
const BLOCK: usize = 16;

/// Appends `text` to `out` with a backslash before every `"` and `\`: the inside of a JSON string
/// holding `text`, when `text` is serialized JSON.
pub fn push_escaped(text: &[u8], out: &mut Vec<u8>) {
    out.reserve(room_for(text.len()));
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("ssse3") {
        ssse3::push_escaped(text, out);
        return;
    }
    portable::push_escaped(text, out);
}

/// The quotes of a byte and the byte itself, written one by one: the tail of the fast path, and
/// the reference the tests hold both paths to.
fn escape_byte(byte: u8, out: &mut Vec<u8>) {
    if byte == b'"' || byte == b'\\' {
        out.push(b'\\');
    }
    out.push(byte);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod ssse3 {
    use super::{BLOCK, escape_byte};
    use core::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cvtsi32_si128, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8, _mm_shuffle_epi8, _mm_slli_si128, _mm_srli_si128,
        _mm_storeu_si128,
    };
    use core::mem::MaybeUninit;

    /// The lane of a half-block vector that holds the backslash (lanes 0 to 7 hold the half's
    /// bytes, the others are zero).
    const BACKSLASH_LANE: u8 = 15;

    /// For each 8-bit mask of the quotes of 8 bytes, the shuffle that spreads them out: the
    /// lanes to pick, in order, with [`BACKSLASH_LANE`] before each quote, and 0x80 (a zero
    /// byte) after the 8 to 16 bytes written.
    static SHUFFLES: [[u8; BLOCK]; 256] = shuffles();

    /// For each mask, how many bytes its shuffle writes: 8 and one per quote.
    static WRITTEN: [u8; 256] = written();

    const fn shuffles() -> [[u8; BLOCK]; 256] {
        let mut table = [[0x80; BLOCK]; 256];
        let mut mask = 0;
        while mask < 256 {
            let mut at = 0;
            let mut lane = 0;
            while lane < 8 {
                if (mask >> lane) & 1 == 1 {
                    table[mask][at] = BACKSLASH_LANE;
                    at += 1;
                }
                table[mask][at] = lane as u8;
                at += 1;
                lane += 1;
            }
            mask += 1;
        }
        table
    }

    const fn written() -> [u8; 256] {
        let mut table = [0; 256];
        let mut mask = 0;
        while mask < 256 {
            table[mask] = 8 + (mask as u8).count_ones() as u8;
            mask += 1;
        }
        table
    }

    pub(super) fn push_escaped(text: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        let spare = out.spare_capacity_mut();
        assert!(
            spare.len() >= super::room_for(text.len()),
            "push_escaped reserves its room"
        );
        // SAFETY: the caller checked that this CPU has SSSE3, the only feature `blocks` enables.
        let (read, written) = unsafe { blocks(text, spare) };
        // SAFETY: `blocks` initialized the first `written` bytes of the spare capacity (each of
        // its 16-byte stores starts at or before the end of the previous one, the first at 0),
        // and `written` is at most the spare capacity (every store ends within it: the bounds
        // argument in `blocks`).
        unsafe { out.set_len(start + written) };
        for &byte in &text[read..] {
            escape_byte(byte, out);
        }
    }

    /// Escapes the whole 16-byte blocks of `text` into `out` and returns how many bytes it read
    /// and wrote. `out` has room for twice the blocks and one block more.
    #[target_feature(enable = "ssse3")]
    fn blocks(text: &[u8], out: &mut [MaybeUninit<u8>]) -> (usize, usize) {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let low_lanes = _mm_set_epi64x(0, -1);
        let backslash_lane = _mm_slli_si128::<{ BACKSLASH_LANE as i32 }>(_mm_cvtsi32_si128(i32::from(b'\\')));
        assert!(out.len() >= 2 * text.len() + BLOCK, "room for the blocks");
        let out = out.as_mut_ptr();
        let mut at = 0;
        let mut chunks = text.chunks_exact(BLOCK);
        for chunk in &mut chunks {
            // Bounds: with the block at input offset `i` (`i + 16 <= text.len()`), `at <= 2 * i`
            // (each block writes at most twice its bytes), so every store below ends at or
            // before `2 * i + 32 <= 2 * text.len() + 16`, within `out` (asserted above).
            let bytes = load(chunk);
            let quotes = _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash));
            let mask = _mm_movemask_epi8(quotes) as usize;
            if mask == 0 {
                // SAFETY: within `out` (the bounds above).
                unsafe { store(out.add(at), bytes) };
                at += BLOCK;
                continue;
            }
            let (low_mask, high_mask) = (mask & 0xFF, mask >> 8);
            let low = _mm_or_si128(_mm_and_si128(bytes, low_lanes), backslash_lane);
            let spread = _mm_shuffle_epi8(low, load(&SHUFFLES[low_mask]));
            // SAFETY: within `out` (the bounds above).
            unsafe { store(out.add(at), spread) };
            at += usize::from(WRITTEN[low_mask]);
            let high = _mm_or_si128(_mm_srli_si128::<8>(bytes), backslash_lane);
            let spread = _mm_shuffle_epi8(high, load(&SHUFFLES[high_mask]));
            // SAFETY: within `out` (the bounds above).
            unsafe { store(out.add(at), spread) };
            at += usize::from(WRITTEN[high_mask]);
        }
        (text.len() - chunks.remainder().len(), at)
    }

    /// The 16 bytes of `bytes` as a vector.
    #[inline(always)]
    fn load(bytes: &[u8]) -> __m128i {
        let bytes: &[u8; BLOCK] = bytes.try_into().expect("a block");
        // SAFETY: `bytes` is 16 readable bytes; the load has no alignment requirement (SSE2,
        // which every x86-64 CPU has).
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    /// Writes `value` over the 16 bytes at `into`.
    ///
    /// # Safety
    /// `into` points to 16 writable bytes.
    #[inline(always)]
    unsafe fn store(into: *mut MaybeUninit<u8>, value: __m128i) {
        // SAFETY: 16 writable bytes (the caller's promise); the store has no alignment
        // requirement (SSE2).
        unsafe { _mm_storeu_si128(into.cast(), value) }
    }

    #[cfg(test)]
    pub(super) fn has_ssse3() -> bool {
        std::is_x86_feature_detected!("ssse3")
    }
}

/// The path of CPUs without SSSE3, in safe code: 8 bytes at a time in a `u64`. A word without a
/// quote is one 8-byte copy; each quote costs one 8-byte copy from just before it, shifted by the
/// backslashes written so far. Copies are whole words that may run past what is kept, into 8
/// bytes of slack cut off at the end.
mod portable {
    use super::{escape_byte, zero_bytes};

    const WORD: usize = 8;

    pub(super) fn push_escaped(text: &[u8], out: &mut Vec<u8>) {
        let quotes = text.iter().filter(|byte| matches!(byte, b'"' | b'\\')).count();
        let start = out.len();
        let length = text.len() + quotes;
        out.resize(start + length + WORD, 0);
        let written = &mut out[start..];
        let mut at = 0;
        let mut from = 0;
        // A word is read in full even from its last quote, so the loop stops one word early.
        while from + 2 * WORD <= text.len() {
            let Some(word) = text[from..].first_chunk::<WORD>() else {
                break;
            };
            let mut found = quote_bits(u64::from_le_bytes(*word));
            let mut done = 0;
            while found != 0 {
                let quote = found.trailing_zeros() as usize / 8;
                written[at..at + WORD].copy_from_slice(&text[from + done..from + done + WORD]);
                at += quote - done;
                written[at] = b'\\';
                at += 1;
                // The quote itself is the first byte of the next copy.
                done = quote;
                found &= found - 1;
            }
            written[at..at + WORD].copy_from_slice(&text[from + done..from + done + WORD]);
            at += WORD - done;
            from += WORD;
        }
        out.truncate(start + at);
        for &byte in &text[from..] {
            escape_byte(byte, out);
        }
    }

    /// The high bit of each byte of `word` that is `"` or `\`, and no other bit.
    #[inline(always)]
    fn quote_bits(word: u64) -> u64 {
        const EACH: u64 = u64::from_ne_bytes([1; 8]);
        zero_bytes(word ^ (EACH * u64::from(b'"'))) | zero_bytes(word ^ (EACH * u64::from(b'\\')))
    }
}

/// The reading side: the length of a JSON string's inside that `text` starts with, up to its
/// closing quote, when it needs no unescaping; `None` when a backslash (an escape) or a control
/// character (invalid raw in JSON) comes first, or no quote. Eight bytes at a time, in safe code.
pub fn unescaped_length(text: &[u8]) -> Option<usize> {
    const EACH: u64 = u64::from_ne_bytes([1; 8]);
    let mut at = 0;
    while let Some(word) = text.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*word);
        let stops = zero_bytes(word ^ (EACH * u64::from(b'"')))
            | zero_bytes(word ^ (EACH * u64::from(b'\\')))
            // A byte under 0x20 has none of the bits 0xE0.
            | zero_bytes(word & (EACH * 0xE0));
        if stops != 0 {
            at += stops.trailing_zeros() as usize / 8;
            break;
        }
        at += 8;
    }
    while let Some(&byte) = text.get(at) {
        match byte {
            b'"' => return Some(at),
            b'\\' | 0..0x20 => return None,
            _ => at += 1,
        }
    }
    None
}

/// The high bit of each zero byte of `word`: exact for every byte (the low seven bits of each
/// byte are added to 0x7F without a carry into the next byte, unlike the shorter
/// `(v - 0x01…) & !v` test, which also marks some bytes after a zero one).
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    const LOW7: u64 = u64::from_ne_bytes([0x7F; 8]);
    !(((word & LOW7).wrapping_add(LOW7)) | word | LOW7)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Path = fn(&[u8], &mut Vec<u8>);

    /// The paths this CPU can run, by name.
    fn paths() -> Vec<(&'static str, Path)> {
        let mut paths: Vec<(&'static str, Path)> = vec![
            ("push_escaped", push_escaped),
            ("portable", |text, out| {
                out.reserve(room_for(text.len()));
                portable::push_escaped(text, out);
            }),
        ];
        #[cfg(target_arch = "x86_64")]
        if ssse3::has_ssse3() {
            paths.push(("ssse3", |text, out| {
                out.reserve(room_for(text.len()));
                ssse3::push_escaped(text, out);
            }));
        }
        paths
    }

    fn reference(prefix: &[u8], text: &[u8]) -> Vec<u8> {
        let mut out = prefix.to_vec();
        for &byte in text {
            escape_byte(byte, &mut out);
        }
        out
    }

    fn check(prefix: &[u8], text: &[u8]) {
        let expected = reference(prefix, text);
        for (name, path) in paths() {
            let mut out = prefix.to_vec();
            path(text, &mut out);
            assert_eq!(out, expected, "{name} on {text:?}");
        }
    }

    #[test]
    fn every_pattern_of_quotes_in_a_block_gets_a_backslash_before_each_quote_and_nothing_else() {
        // Bytes that differ from `"` (0x22) or `\` (0x5C) in one bit, high bit included, stand
        // between the quotes; a second block and a tail follow so that every path reaches its
        // block loop and its tail.
        let others = [b'a', 0xA2, 0xDC, 0x23, 0x5D, 0x02, 0x00, 0xFF];
        for mask in 0..=u16::MAX {
            let block: Vec<u8> = (0..16)
                .map(|lane| match (mask >> lane) & 1 {
                    1 if lane % 3 == 0 => b'\\',
                    1 => b'"',
                    _ => others[(lane + usize::from(mask % 7)) % others.len()],
                })
                .collect();
            let text = [block.as_slice(), &block[..], b"x\"\\y"].concat();
            check(b"", &text);
            check(b"{\"text\":\"", &text[..16 + usize::from(mask % 16)]);
        }
    }

    #[test]
    fn random_text_of_every_length_is_escaped_as_a_byte_loop_escapes_it() {
        let mut state = 0x2545_f491_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for length in 0..=300 {
            for density in [0, 2, 10, 50, 100] {
                let text: Vec<u8> = (0..length)
                    .map(|_| {
                        let roll = next();
                        if roll % 100 < density {
                            if roll & 0x100 == 0 { b'"' } else { b'\\' }
                        } else {
                            (roll >> 9) as u8
                        }
                    })
                    .collect();
                check(b"", &text);
                check(b"prefix", &text);
            }
        }
    }

    #[test]
    fn a_text_made_only_of_quotes_doubles_and_one_without_any_is_copied() {
        for length in [1, 15, 16, 17, 64, 1000] {
            let quotes = "\"".repeat(length);
            let backslashes = "\\".repeat(length);
            check(b"", quotes.as_bytes());
            check(b"", backslashes.as_bytes());
            check(b"", "x".repeat(length).as_bytes());
            let mut out = Vec::new();
            push_escaped(quotes.as_bytes(), &mut out);
            assert_eq!(out, "\\\"".repeat(length).as_bytes());
        }
    }

    #[test]
    fn serialized_json_escaped_reads_back_as_the_same_string() {
        let json = r#"{"order":{"id":"ORD-1","notes":"a \"quoted\" C:\\path","lines":[{"name":"Ü ¢ ܐ"}]}}"#;
        let mut inside = b"\"".to_vec();
        push_escaped(json.as_bytes(), &mut inside);
        inside.push(b'"');
        // The escaped text is a JSON string whose value is the JSON text again.
        let mut reread = String::new();
        let mut bytes = std::str::from_utf8(&inside[1..inside.len() - 1]).unwrap().chars();
        while let Some(char) = bytes.next() {
            reread.push(if char == '\\' { bytes.next().unwrap() } else { char });
        }
        assert_eq!(reread, json);
    }

    #[test]
    fn room_for_covers_the_worst_case_and_one_block() {
        assert_eq!(room_for(0), 16);
        assert_eq!(room_for(100), 216);
        // Appending into a buffer sized with room_for does not grow it.
        let text = "\"".repeat(100);
        let mut out = Vec::with_capacity(room_for(text.len()));
        let capacity = out.capacity();
        push_escaped(text.as_bytes(), &mut out);
        assert_eq!((out.len(), out.capacity()), (200, capacity));
    }

    #[test]
    fn an_unescaped_string_ends_at_its_first_quote_and_is_refused_at_an_escape_or_a_control_character() {
        let cases: [(&[u8], Option<usize>); 12] = [
            (b"\"", Some(0)),
            (b"abc\"", Some(3)),
            (b"0123456789abcdef\"xyz\"", Some(16)),
            (b"01234567\"", Some(8)),
            (b"0123456\"", Some(7)),
            ("é ü ¢ Ü ܐ and more\"".as_bytes(), Some(23)),
            (b"0123456789\\\"\"", None),
            (b"0123456789\n\"", None),
            (b"0123\x1f\"", None),
            (b"0123\x7f\xa2\xdc\"", Some(7)),
            (b"no closing quote at all", None),
            (b"", None),
        ];
        for (text, length) in cases {
            assert_eq!(
                unescaped_length(text),
                length,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        // A stop at every position of a word and of the tail.
        for at in 0..20 {
            for stop in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                let mut text = vec![b'a'; 24];
                text[at] = stop;
                text.push(b'"');
                let expected = if stop == b'"' { Some(at) } else { None };
                assert_eq!(unescaped_length(&text), expected, "{stop:#x} at {at}");
            }
        }
    }
}
