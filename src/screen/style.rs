//! The pen of a terminal (colors and attributes) as SGR sequences set it, kept apart from the
//! cells: history read back from a log carries it as SGR again, written by [`Style::write_sgr`],
//! so a page scrolled back shows the colors the live screen showed.

use std::fmt::Write as _;

use super::decode::{Csi, Escape, MAX_CSI_PARAMS, Step};
use super::{CellAttrs, CellColor};

/// Colors and attributes, as the last SGR sequences left them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Style {
    pub fg: CellColor,
    pub bg: CellColor,
    pub attrs: CellAttrs,
}

impl Style {
    /// Whether this is the pen a terminal starts with.
    #[must_use]
    pub(crate) fn is_plain(&self) -> bool {
        *self == Self::default()
    }

    /// The pen after `step`: SGR sets it, RIS resets it, nothing else touches it.
    pub(crate) fn follow(&mut self, step: &Step) {
        match step {
            Step::Csi(csi) if csi.action == b'm' && !csi.private && !csi.intermediate => {
                self.apply_sgr(csi);
            }
            Step::Escape(Escape {
                intermediate: None,
                action: b'c',
            }) => *self = Self::default(),
            _ => {}
        }
    }

    /// Carries out an SGR sequence (`ESC [ … m`), as xterm reads it: `;` between attributes, and
    /// an extended color's numbers after `;` or `:` (`38;5;N`, `38;2;R;G;B`, `38:2::R:G:B`).
    pub(crate) fn apply_sgr(&mut self, csi: &Csi) {
        let params = csi.params();
        if params.is_empty() {
            *self = Self::default();
        }
        let mut index = 0;
        while let Some(&param) = params.get(index) {
            index += 1;
            if csi.is_subparam(index - 1) {
                // A part of the attribute before (`4:3`): no attribute of its own.
                continue;
            }
            // The parts after a colon belong to this attribute.
            let parts = (index..params.len())
                .take_while(|&part| csi.is_subparam(part))
                .count();
            let attrs = &mut self.attrs;
            match param {
                0 => *self = Self::default(),
                1 => attrs.bold = true,
                2 => attrs.dim = true,
                3 => attrs.italic = true,
                4 => attrs.underline = parts == 0 || params[index] != 0,
                5 | 6 => attrs.blink = true,
                7 => attrs.inverse = true,
                8 => attrs.hidden = true,
                9 => attrs.strikethrough = true,
                // Double underline: an underline all the same.
                21 => attrs.underline = true,
                22 => (attrs.bold, attrs.dim) = (false, false),
                23 => attrs.italic = false,
                24 => attrs.underline = false,
                25 => attrs.blink = false,
                27 => attrs.inverse = false,
                28 => attrs.hidden = false,
                29 => attrs.strikethrough = false,
                53 => attrs.overline = true,
                55 => attrs.overline = false,
                30..=37 => self.fg = CellColor::Indexed(low(param - 30)),
                39 => self.fg = CellColor::Default,
                40..=47 => self.bg = CellColor::Indexed(low(param - 40)),
                49 => self.bg = CellColor::Default,
                90..=97 => self.fg = CellColor::Indexed(low(param - 90 + 8)),
                100..=107 => self.bg = CellColor::Indexed(low(param - 100 + 8)),
                38 | 48 | 58 => {
                    let (color, used) = if parts > 0 {
                        (extended_color(&params[index..index + parts], true), parts)
                    } else {
                        let rest = &params[index..];
                        let used = match rest.first() {
                            Some(5) => 2,
                            Some(2) => 4,
                            _ => 0,
                        };
                        (
                            extended_color(&rest[..used.min(rest.len())], false),
                            used.min(rest.len()),
                        )
                    };
                    index += used;
                    match (param, color) {
                        (38, Some(color)) => self.fg = color,
                        (48, Some(color)) => self.bg = color,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether vt100 reads `csi` (an SGR) otherwise than it means: the colon forms (`4:3`,
    /// `38:2::R:G:B`), a double underline (21), an underline colour (58, whose numbers vt100
    /// takes for attributes).
    pub(crate) fn misread_by_vt100(csi: &Csi) -> bool {
        let params = csi.params();
        if (0..params.len()).any(|index| csi.is_subparam(index)) {
            return true;
        }
        let mut index = 0;
        while let Some(&param) = params.get(index) {
            index += 1;
            match param {
                21 | 58 => return true,
                38 | 48 => {
                    index += match params.get(index) {
                        Some(5) => 2,
                        Some(2) => 4,
                        _ => 0,
                    };
                }
                _ => {}
            }
        }
        false
    }

    /// Writes the SGR sequences that set this pen from any other (the first is a reset). Each
    /// holds at most [`MAX_CSI_PARAMS`] parameters, as every reader takes.
    pub(crate) fn write_sgr(&self, out: &mut String) {
        let attrs = &self.attrs;
        let mut params: Vec<u8> = vec![0];
        for (on, code) in [
            (attrs.bold, 1),
            (attrs.dim, 2),
            (attrs.italic, 3),
            (attrs.underline, 4),
            (attrs.blink, 5),
            (attrs.inverse, 7),
            (attrs.hidden, 8),
            (attrs.strikethrough, 9),
            (attrs.overline, 53),
        ] {
            if on {
                params.push(code);
            }
        }
        let mut colors = Vec::new();
        for (color, base) in [(self.fg, 30), (self.bg, 40)] {
            match color {
                CellColor::Default => {}
                CellColor::Indexed(index @ 0..=7) => colors.push(vec![base + index]),
                CellColor::Indexed(index @ 8..=15) => colors.push(vec![base + 60 + index - 8]),
                CellColor::Indexed(index) => colors.push(vec![base + 8, 5, index]),
                CellColor::Rgb(red, green, blue) => {
                    colors.push(vec![base + 8, 2, red, green, blue]);
                }
            }
        }
        for color in colors {
            if params.len() + color.len() > MAX_CSI_PARAMS {
                write_sequence(&params, out);
                params.clear();
            }
            params.extend(color);
        }
        write_sequence(&params, out);
    }
}

/// `ESC [ params m`.
fn write_sequence(params: &[u8], out: &mut String) {
    out.push_str("\x1b[");
    for (index, param) in params.iter().enumerate() {
        if index > 0 {
            out.push(';');
        }
        let _ = write!(out, "{param}");
    }
    out.push('m');
}

/// A color index below 16, as a byte.
fn low(index: u16) -> u8 {
    u8::try_from(index).unwrap_or(u8::MAX)
}

/// The color an extended color's numbers name (after `38`/`48`): `5;N` or `2;R;G;B`; with
/// colons, `2` may be followed by a color space id before `R:G:B`.
fn extended_color(numbers: &[u16], colons: bool) -> Option<CellColor> {
    let byte = |value: u16| u8::try_from(value).ok();
    match numbers {
        [5, index, ..] => byte(*index).map(CellColor::Indexed),
        [2, _, red, green, blue, ..] if colons => {
            Some(CellColor::Rgb(byte(*red)?, byte(*green)?, byte(*blue)?))
        }
        [2, red, green, blue, ..] => Some(CellColor::Rgb(byte(*red)?, byte(*green)?, byte(*blue)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::decode::Decoder;

    /// The pen after `bytes`, starting from `style`.
    fn after(mut style: Style, bytes: &[u8]) -> Style {
        let mut decoder = Decoder::new();
        for &byte in bytes {
            decoder.advance(byte, &mut |step| style.follow(&step));
        }
        style
    }

    #[test]
    fn sgr_sets_and_resets_what_a_terminal_does() {
        let style = after(Style::default(), b"\x1b[1;3;4;5;7;9;31;44m");
        let attrs = style.attrs;
        assert!(attrs.bold && attrs.italic && attrs.underline && attrs.blink);
        assert!(attrs.inverse && attrs.strikethrough && !attrs.dim);
        assert_eq!(style.fg, CellColor::Indexed(1));
        assert_eq!(style.bg, CellColor::Indexed(4));
        let reset = after(style, b"\x1b[22;23;24;25;27;29;39;49m");
        assert!(reset.is_plain(), "{reset:?}");
        assert!(after(style, b"\x1b[m").is_plain());
        assert!(after(style, b"\x1b[0m").is_plain());
        assert!(after(style, b"\x1bc").is_plain());
        // Not SGR: a private or intermediate `m`.
        assert_eq!(after(style, b"\x1b[?0m\x1b[>0m\x1b[ 0m"), style);
        assert_eq!(
            after(Style::default(), b"\x1b[92;103m"),
            Style {
                fg: CellColor::Indexed(10),
                bg: CellColor::Indexed(11),
                ..Style::default()
            }
        );
    }

    #[test]
    fn extended_colors_are_read_with_semicolons_and_colons() {
        let cases: [(&[u8], CellColor, CellColor); 5] = [
            (
                b"\x1b[38;5;208;48;2;1;2;3m",
                CellColor::Indexed(208),
                CellColor::Rgb(1, 2, 3),
            ),
            (
                b"\x1b[38:5:208;48:2::1:2:3m",
                CellColor::Indexed(208),
                CellColor::Rgb(1, 2, 3),
            ),
            (
                b"\x1b[38:2:9:8:7;1m",
                CellColor::Rgb(9, 8, 7),
                CellColor::Default,
            ),
            // The numbers of an extended color are not attributes of their own (5 is not blink).
            (b"\x1b[48;5;5m", CellColor::Default, CellColor::Indexed(5)),
            // A color out of range sets nothing, and what follows is still read.
            (
                b"\x1b[38;5;300;32m",
                CellColor::Indexed(2),
                CellColor::Default,
            ),
        ];
        for (bytes, fg, bg) in cases {
            let style = after(Style::default(), bytes);
            assert_eq!((style.fg, style.bg), (fg, bg), "{bytes:?}");
            assert!(!style.attrs.blink, "{bytes:?}");
        }
        assert!(after(Style::default(), b"\x1b[38:2::1:2:3;1m").attrs.bold);
        assert!(!after(Style::default(), b"\x1b[4:0m").attrs.underline);
        assert!(after(Style::default(), b"\x1b[4:3m").attrs.underline);
    }

    #[test]
    fn a_written_pen_reads_back_as_itself() {
        let colors = [
            CellColor::Default,
            CellColor::Indexed(3),
            CellColor::Indexed(12),
            CellColor::Indexed(200),
            CellColor::Rgb(0, 128, 255),
        ];
        for fg in colors {
            for bg in colors {
                for bits in [0u8, 0b101_0101, 0b010_1010, 0b111_1111] {
                    let bit = |n: u8| bits & (1 << n) != 0;
                    let style = Style {
                        fg,
                        bg,
                        attrs: CellAttrs {
                            bold: bit(0),
                            dim: bit(1),
                            italic: bit(2),
                            underline: bit(3),
                            inverse: bit(4),
                            blink: bit(5),
                            strikethrough: bit(6),
                            hidden: bit(0),
                            overline: bit(3),
                        },
                    };
                    let mut sgr = String::new();
                    style.write_sgr(&mut sgr);
                    // From any pen, not only the plain one.
                    let other = after(Style::default(), b"\x1b[1;2;3;4;5;7;9;33;45m");
                    assert_eq!(after(other, sgr.as_bytes()), style, "{sgr:?}");
                }
            }
        }
    }
}
