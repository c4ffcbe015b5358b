//! The grammar of terminal output, byte by byte: the VT500 parser that xterm, vte and the vt100
//! crate (through vte) follow, plus UTF-8 in the ground state.
//!
//! Every reader of raw output agrees on it: the text cleaner, the sink's index of boundaries and
//! lines, and the log readers. A position is a *boundary* when the bytes before it leave the
//! decoder in the ground state with no character half read: only there may a reader start or
//! stop, so no reader ever splits a character or an escape sequence.
//!
//! String controls (OSC, DCS, SOS, PM, APC) end where a terminal ends them: BEL (OSC only), ST,
//! CAN, SUB, or the ESC of any new sequence. Nothing is buffered here: their content is skipped.

/// Numeric parameters of a CSI sequence kept; more are ignored (as vte does).
pub(crate) const MAX_CSI_PARAMS: usize = 16;

/// Where the decoder is within the grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
    DcsEntry,
    DcsParam,
    DcsIntermediate,
    DcsIgnore,
    DcsString,
    OscString,
    /// SOS, PM and APC: ended only by CAN, SUB or ESC.
    IgnoredString,
}

/// A complete CSI sequence: `ESC [ params final`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Csi {
    pub action: u8,
    /// A private marker (`?`, `>`, `<`, `=`) came first.
    pub private: bool,
    /// That marker (0: none).
    pub marker: u8,
    /// Intermediate bytes (`SP`, `!`, `"` …) came before the final byte.
    pub intermediate: bool,
    params: [u16; MAX_CSI_PARAMS],
    param_count: u8,
    /// Bit `i`: parameter `i` came after a colon, a part of the one before (`38:2::R:G:B`).
    subparams: u16,
}

impl Csi {
    /// The parameters given (an empty one reads as 0).
    #[must_use]
    pub fn params(&self) -> &[u16] {
        &self.params[..usize::from(self.param_count)]
    }

    /// Whether parameter `index` is a part of the one before it (it came after a colon).
    #[must_use]
    pub(crate) fn is_subparam(&self, index: usize) -> bool {
        index < MAX_CSI_PARAMS && self.subparams & (1 << index) != 0
    }

    /// The first parameter, or `default` when it is absent or 0 (how counts are read).
    #[must_use]
    pub fn count(&self, default: u16) -> u16 {
        match self.params().first() {
            Some(&value) if value != 0 => value,
            _ => default,
        }
    }
}

/// What one byte amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A character to show.
    Print(char),
    /// A C0 control to carry out (`\n`, `\r`, backspace, tab, …).
    Execute(u8),
    /// A complete CSI sequence.
    Csi(Csi),
    /// A complete escape sequence other than CSI and string controls: `ESC [intermediate] final`.
    Escape(Escape),
}

/// An escape sequence's content: designations (`ESC ( 0`), index moves (`ESC D`), tests
/// (`ESC # 8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Escape {
    /// The first intermediate byte (`(`, `)`, `#` …), if any.
    pub intermediate: Option<u8>,
    pub action: u8,
}

/// The decoder: state only, a few dozen bytes, whatever the input.
#[derive(Clone, Debug)]
pub(crate) struct Decoder {
    state: State,
    utf8: [u8; 4],
    utf8_len: u8,
    utf8_need: u8,
    csi: Csi,
    /// The escape sequence's first intermediate byte.
    escape_intermediate: Option<u8>,
    /// A parameter is being written (its digits so far are in `csi.params`).
    param_open: bool,
    /// More parameters came than are kept.
    params_overflow: bool,
    /// The last separator was a colon: the next parameter is a part of the one before.
    colon: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: State::Ground,
            utf8: [0; 4],
            utf8_len: 0,
            utf8_need: 0,
            csi: Csi {
                action: 0,
                private: false,
                marker: 0,
                intermediate: false,
                params: [0; MAX_CSI_PARAMS],
                param_count: 0,
                subparams: 0,
            },
            colon: false,
            escape_intermediate: None,
            param_open: false,
            params_overflow: false,
        }
    }

    /// Whether the bytes so far end at a boundary: the ground state, no character half read.
    #[must_use]
    pub(crate) fn at_boundary(&self) -> bool {
        self.state == State::Ground && self.utf8_need == 0
    }

    /// Whether the decoder is in the ground state (a character may be half read).
    #[must_use]
    pub(crate) fn in_ground(&self) -> bool {
        self.state == State::Ground
    }

    /// Whether the decoder is within a string control (OSC, DCS, SOS, PM, APC).
    #[must_use]
    pub(crate) fn in_string(&self) -> bool {
        matches!(
            self.state,
            State::DcsString | State::OscString | State::IgnoredString | State::DcsIgnore
        )
    }

    /// Ends the input: a half-read character becomes U+FFFD; an unfinished sequence is dropped.
    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(Step)) {
        if self.utf8_need > 0 {
            self.utf8_need = 0;
            self.utf8_len = 0;
            emit(Step::Print(char::REPLACEMENT_CHARACTER));
        }
        self.state = State::Ground;
    }

    /// Takes one byte; `emit` gets what it amounts to (a broken character gives two steps).
    #[inline]
    pub(crate) fn advance(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        if self.utf8_need > 0 {
            if byte & 0xc0 == 0x80 {
                self.utf8[usize::from(self.utf8_len)] = byte;
                self.utf8_len += 1;
                if self.utf8_len == self.utf8_need {
                    let decoded = std::str::from_utf8(&self.utf8[..usize::from(self.utf8_len)])
                        .ok()
                        .and_then(|text| text.chars().next())
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    self.utf8_need = 0;
                    self.utf8_len = 0;
                    emit(Step::Print(decoded));
                }
                return;
            }
            // A broken character: replace it, then read this byte afresh.
            self.utf8_need = 0;
            self.utf8_len = 0;
            emit(Step::Print(char::REPLACEMENT_CHARACTER));
        }
        match self.state {
            State::Ground => self.ground(byte, emit),
            State::Escape => self.escape(byte, emit),
            State::EscapeIntermediate => match byte {
                0x20..=0x2f | 0x7f => {}
                0x30..=0x7e => {
                    self.state = State::Ground;
                    emit(Step::Escape(Escape {
                        intermediate: self.escape_intermediate,
                        action: byte,
                    }));
                }
                _ => self.anywhere_or_execute(byte, emit),
            },
            State::CsiEntry | State::CsiParam | State::CsiIntermediate => self.csi(byte, emit),
            State::CsiIgnore => match byte {
                0x40..=0x7e => self.state = State::Ground,
                0x20..=0x3f | 0x7f => {}
                _ => self.anywhere_or_execute(byte, emit),
            },
            State::DcsEntry | State::DcsParam | State::DcsIntermediate => self.dcs_header(byte),
            State::DcsString => match byte {
                0x9c => self.state = State::Ground,
                _ => self.anywhere(byte, emit),
            },
            State::OscString => match byte {
                0x07 => self.state = State::Ground,
                _ => self.anywhere(byte, emit),
            },
            State::DcsIgnore | State::IgnoredString => self.anywhere(byte, emit),
        }
    }

    #[inline]
    fn ground(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        match byte {
            0x20..=0x7e => emit(Step::Print(char::from(byte))),
            0x1b => self.enter_escape(),
            0x00..=0x1f => emit(Step::Execute(byte)),
            0x7f => {}
            0xc2..=0xdf => self.start_utf8(byte, 2),
            0xe0..=0xef => self.start_utf8(byte, 3),
            0xf0..=0xf4 => self.start_utf8(byte, 4),
            _ => emit(Step::Print(char::REPLACEMENT_CHARACTER)),
        }
    }

    fn start_utf8(&mut self, byte: u8, need: u8) {
        self.utf8[0] = byte;
        self.utf8_len = 1;
        self.utf8_need = need;
    }

    fn enter_escape(&mut self) {
        self.state = State::Escape;
        self.csi.private = false;
        self.csi.marker = 0;
        self.csi.intermediate = false;
        self.csi.param_count = 0;
        self.csi.subparams = 0;
        self.colon = false;
        self.escape_intermediate = None;
        self.param_open = false;
        self.params_overflow = false;
    }

    /// CAN and SUB cancel any sequence; ESC starts a new one; nothing else matters here.
    fn anywhere(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        match byte {
            0x18 | 0x1a => {
                self.state = State::Ground;
                emit(Step::Execute(byte));
            }
            0x1b => self.enter_escape(),
            _ => {}
        }
    }

    /// Within escapes and CSI sequences, C0 controls are carried out as they come.
    fn anywhere_or_execute(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        match byte {
            0x18 | 0x1a | 0x1b => self.anywhere(byte, emit),
            0x00..=0x1f => emit(Step::Execute(byte)),
            _ => {}
        }
    }

    fn escape(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        match byte {
            0x20..=0x2f => {
                self.state = State::EscapeIntermediate;
                self.escape_intermediate = Some(byte);
            }
            b'P' => self.state = State::DcsEntry,
            b'X' | b'^' | b'_' => self.state = State::IgnoredString,
            b'[' => self.state = State::CsiEntry,
            b']' => self.state = State::OscString,
            0x30..=0x7e => {
                self.state = State::Ground;
                emit(Step::Escape(Escape {
                    intermediate: None,
                    action: byte,
                }));
            }
            // ESC ESC: still an escape.
            0x1b | 0x7f => {}
            _ => self.anywhere_or_execute(byte, emit),
        }
    }

    fn csi(&mut self, byte: u8, emit: &mut impl FnMut(Step)) {
        match (self.state, byte) {
            (State::CsiEntry | State::CsiParam, b'0'..=b'9') => {
                self.state = State::CsiParam;
                self.digit(byte);
            }
            (State::CsiEntry | State::CsiParam, b';' | b':') => {
                self.state = State::CsiParam;
                // An empty parameter before the separator counts as one.
                if !self.param_open {
                    self.push_param();
                }
                self.param_open = false;
                self.colon = byte == b':';
            }
            (State::CsiEntry, 0x3c..=0x3f) => {
                self.state = State::CsiParam;
                self.csi.private = true;
                self.csi.marker = byte;
            }
            (State::CsiParam, 0x3c..=0x3f) | (State::CsiIntermediate, 0x30..=0x3f) => {
                self.state = State::CsiIgnore;
            }
            (_, 0x20..=0x2f) => {
                self.state = State::CsiIntermediate;
                self.csi.intermediate = true;
            }
            (_, 0x40..=0x7e) => {
                self.state = State::Ground;
                self.csi.action = byte;
                emit(Step::Csi(self.csi));
            }
            (_, 0x7f) => {}
            _ => self.anywhere_or_execute(byte, emit),
        }
    }

    fn digit(&mut self, byte: u8) {
        if !self.param_open {
            self.push_param();
            self.param_open = true;
        }
        if !self.params_overflow {
            let param = &mut self.csi.params[usize::from(self.csi.param_count) - 1];
            *param = param
                .saturating_mul(10)
                .saturating_add(u16::from(byte - b'0'));
        }
    }

    /// Starts the next parameter at 0; past the last one kept, parameters are read and dropped.
    fn push_param(&mut self) {
        if usize::from(self.csi.param_count) < MAX_CSI_PARAMS {
            self.csi.params[usize::from(self.csi.param_count)] = 0;
            if std::mem::take(&mut self.colon) {
                self.csi.subparams |= 1 << self.csi.param_count;
            }
            self.csi.param_count += 1;
        } else {
            self.params_overflow = true;
        }
    }

    fn dcs_header(&mut self, byte: u8) {
        self.state = match (self.state, byte) {
            (State::DcsEntry | State::DcsParam, 0x30..=0x3b) | (State::DcsEntry, 0x3c..=0x3f) => {
                State::DcsParam
            }
            (State::DcsParam, 0x3c..=0x3f) | (State::DcsIntermediate, 0x30..=0x3f) => {
                State::DcsIgnore
            }
            (_, 0x20..=0x2f) => State::DcsIntermediate,
            (_, 0x40..=0x7e) => State::DcsString,
            (_, 0x18 | 0x1a) => State::Ground,
            (_, 0x1b) => {
                self.enter_escape();
                return;
            }
            // C0 controls, DEL and the rest are ignored in a DCS header.
            (state, _) => state,
        };
    }
}

/// The DEC special graphics charset: line drawing and a few symbols in place of `_` to `~`.
pub(crate) fn dec_graphics(character: char) -> char {
    const TABLE: [char; 32] = [
        ' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼', '⎺', '⎻',
        '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
    ];
    match u32::from(character) {
        code @ 0x5f..=0x7e => TABLE[usize::try_from(code - 0x5f).unwrap_or(0)],
        _ => character,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(bytes: &[u8]) -> Vec<Step> {
        let mut decoder = Decoder::new();
        let mut steps = Vec::new();
        for &byte in bytes {
            decoder.advance(byte, &mut |step| steps.push(step));
        }
        decoder.finish(&mut |step| steps.push(step));
        steps
    }

    fn printed(bytes: &[u8]) -> String {
        steps(bytes)
            .into_iter()
            .filter_map(|step| match step {
                Step::Print(c) => Some(c),
                Step::Execute(b'\n') => Some('\n'),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn string_controls_end_where_a_terminal_ends_them() {
        // BEL and ST end an OSC; CAN and SUB cancel any string; a new ESC ends one and starts.
        assert_eq!(printed(b"a\x1b]0;t\x07b"), "ab");
        assert_eq!(printed(b"a\x1b]0;t\x1b\\b"), "ab");
        assert_eq!(printed(b"a\x1b]0;t\nstill title\x18b"), "ab");
        assert_eq!(printed(b"a\x1b_apc\x1ab"), "ab");
        assert_eq!(printed(b"a\x1bPq#0;1\x1b[32mb"), "ab");
        assert_eq!(printed(b"a\x1b]0;t\n\x1b[32mPASS\x1b[0m\n"), "aPASS\n");
        // BEL ends an OSC only.
        assert_eq!(printed(b"a\x1b_x\x07y\x1b\\b"), "ab");
    }

    #[test]
    fn controls_within_a_csi_are_carried_out_and_the_csi_goes_on() {
        let steps = steps(b"A\x1b[3\n1mB");
        assert_eq!(steps[1], Step::Execute(b'\n'));
        let Step::Csi(csi) = steps[2] else {
            panic!("{steps:?}")
        };
        assert_eq!((csi.action, csi.params()), (b'm', &[31][..]));
        assert_eq!(printed(b"M\x1b[3\x18N"), "MN");
    }

    #[test]
    fn parameters_are_clamped_and_bounded_in_number() {
        let many = format!("\x1b[{}5H", "1;".repeat(1000));
        let Some(Step::Csi(csi)) = steps(many.as_bytes()).last().copied() else {
            panic!("no csi")
        };
        assert_eq!(csi.params().len(), MAX_CSI_PARAMS);
        let Some(Step::Csi(huge)) = steps(b"\x1b[99999999999C").last().copied() else {
            panic!("no csi")
        };
        assert_eq!(huge.params(), [u16::MAX]);
        let Some(Step::Csi(empty)) = steps(b"\x1b[;7H").last().copied() else {
            panic!("no csi")
        };
        assert_eq!(empty.params(), [0, 7]);
        assert_eq!(empty.count(1), 1);
    }

    #[test]
    fn broken_characters_become_replacements_and_the_next_byte_is_read() {
        assert_eq!(printed("ж€😀".as_bytes()), "ж€😀");
        assert_eq!(printed(b"a\xe2\x82b\xffc"), "a\u{fffd}b\u{fffd}c");
        assert_eq!(printed(b"a\xe2\x82\x1b[0mb"), "a\u{fffd}b");
        assert_eq!(printed(b"end\xf0\x9f"), "end\u{fffd}");
    }

    #[test]
    fn boundaries_are_the_ground_with_no_half_character() {
        let mut decoder = Decoder::new();
        let mut at = Vec::new();
        for (index, &byte) in "a\x1b[31mж".as_bytes().iter().enumerate() {
            decoder.advance(byte, &mut |_| {});
            at.push((index + 1, decoder.at_boundary()));
        }
        let boundaries: Vec<usize> = at
            .iter()
            .filter(|(_, yes)| *yes)
            .map(|(at, _)| *at)
            .collect();
        assert_eq!(boundaries, [1, 6, 8]);
    }
}

/// Generated terminal output as a hostile program writes it, for property tests of every reader
/// of raw bytes: text, UTF-8 split anywhere, CSI with huge and many parameters, string controls
/// terminated every way or not at all, stray escapes and raw garbage.
#[cfg(test)]
pub mod hostile {
    use proptest::prelude::*;

    /// How many cases a property runs: `PROPTEST_CASES` for long runs (scripts/proptest).
    #[must_use]
    pub fn config() -> ProptestConfig {
        let cases = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(48);
        ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    fn csi() -> impl Strategy<Value = Vec<u8>> {
        (
            prop_oneof![Just(""), Just("?"), Just(">")],
            proptest::collection::vec(
                prop_oneof![0u32..10, 0u32..300, Just(65_535u32), Just(4_294_967_295u32)],
                0..40,
            ),
            prop_oneof![Just(";"), Just(":")],
            // Now and then a control within (carried out as it comes) or an intermediate.
            prop_oneof![
                6 => Just(Vec::new()),
                1 => proptest::sample::select(vec![0u8, 7, 8, 9, 10, 13]).prop_map(|byte| vec![byte]),
                1 => (0x20u8..0x30).prop_map(|byte| vec![byte]),
            ],
            prop_oneof![
                proptest::sample::select(b"ABCDGHJKLMPSTXabdmrhlnc@`su".to_vec()),
                0x40u8..0x7f
            ],
        )
            .prop_map(|(private, params, separator, before_final, action)| {
                let params: Vec<String> = params.iter().map(u32::to_string).collect();
                let mut bytes = format!("\x1b[{private}{}", params.join(separator)).into_bytes();
                bytes.extend(before_final);
                bytes.push(action);
                bytes
            })
    }

    fn string_control() -> impl Strategy<Value = Vec<u8>> {
        (
            proptest::sample::select(b"]PX^_".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..200),
            prop_oneof![
                Just(b"\x07".to_vec()),
                Just(b"\x1b\\".to_vec()),
                Just(b"\x18".to_vec()),
                Just(b"\x1a".to_vec()),
                Just(b"\x1b[0m".to_vec()),
                Just(Vec::new()),
            ],
        )
            .prop_map(|(introducer, body, end)| {
                let mut bytes = vec![0x1b, introducer];
                bytes.extend(body);
                bytes.extend(end);
                bytes
            })
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => "[ -~]{0,60}".prop_map(String::into_bytes),
            2 => "\\PC{0,20}".prop_map(String::into_bytes),
            2 => proptest::sample::select(vec![&b"\r\n"[..], b"\n", b"\r", b"\x08", b"\t", b"\x0e", b"\x0f"])
                .prop_map(<[u8]>::to_vec),
            3 => csi(),
            2 => string_control(),
            1 => (any::<u8>()).prop_map(|byte| vec![0x1b, byte]),
            1 => proptest::collection::vec(any::<u8>(), 0..30),
            // A character cut short.
            1 => "\\PC".prop_map(|text| {
                let bytes = text.into_bytes();
                bytes[..bytes.len() / 2 + usize::from(bytes.len() == 1)].to_vec()
            }),
        ]
    }

    /// A stream of hostile pieces.
    pub fn stream() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(piece(), 0..80).prop_map(|pieces| pieces.concat())
    }

    /// Hostile sequences between whole characters: no raw invalid bytes in the text, but for what
    /// a string control cut short leaves of its body.
    pub fn stream_of_characters() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => "[ -~]{0,60}".prop_map(String::into_bytes),
            2 => "\\PC{0,20}".prop_map(String::into_bytes),
            2 => proptest::sample::select(vec![&b"\r\n"[..], b"\n", b"\r", b"\x08", b"\t", b"\x0e", b"\x0f"])
                .prop_map(<[u8]>::to_vec),
            3 => csi(),
            2 => string_control(),
            1 => (0x20u8..0x7f).prop_map(|byte| vec![0x1b, byte]),
        ];
        proptest::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
    }

    /// Where to cut a stream into chunks: sizes from 1 byte up.
    pub fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
        proptest::collection::vec(1usize..300, 1..20)
    }

    /// `bytes` cut into chunks of the given sizes, cycling through them.
    #[must_use]
    pub fn chunked<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
        let mut chunks = Vec::new();
        let mut rest = bytes;
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, after) = rest.split_at((*size).min(rest.len()));
            chunks.push(chunk);
            rest = after;
        }
        chunks
    }
}
