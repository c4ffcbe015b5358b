//! The palette a program redefines (OSC 4, and OSC 104 to reset), drawn as tmux draws it: a
//! cell of a redefined index shows the colour set for it, whenever it was drawn.
//!
//! The backlog drops string controls whole; an OSC 4 or 104 it meets it passes on as private
//! CSI sequences that vt100 ignores and [`super::Extras`] reads: `CSI < 4 ; N ; R ; G ; B z`
//! and `CSI < 104 [; N …] z`.

use std::fmt::Write as _;

use crate::screen::CellColor;

/// The longest OSC payload read for colours; a longer one is dropped.
pub(crate) const MAX_PAYLOAD: usize = 512;

/// The sequences that carry out an OSC payload (the bytes after `ESC ]`), when it sets or
/// resets palette colours.
pub(crate) fn sequences(payload: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(payload).ok()?;
    let mut parts = text.split(';');
    let mut out = String::new();
    match parts.next()? {
        "4" => {
            let rest: Vec<&str> = parts.collect();
            for pair in rest.chunks_exact(2) {
                let (Ok(index), Some([red, green, blue])) = (pair[0].parse::<u8>(), rgb(pair[1]))
                else {
                    continue;
                };
                let _ = write!(out, "\x1b[<4;{index};{red};{green};{blue}z");
            }
        }
        "104" => {
            out.push_str("\x1b[<104");
            for index in parts.filter_map(|part| part.parse::<u8>().ok()) {
                let _ = write!(out, ";{index}");
            }
            out.push('z');
        }
        _ => return None,
    }
    (!out.is_empty()).then_some(out)
}

/// A colour as X11 writes it: `rgb:R/G/B` (1 to 4 hex digits each: one is scaled, more keep
/// their two high digits, as tmux reads them) or `#RRGGBB`.
fn rgb(spec: &str) -> Option<[u8; 3]> {
    if let Some(hex) = spec.strip_prefix('#') {
        if hex.len() != 6 || !hex.is_ascii() {
            return None;
        }
        let byte = |at: usize| u8::from_str_radix(&hex[at..at + 2], 16).ok();
        return Some([byte(0)?, byte(2)?, byte(4)?]);
    }
    let mut parts = spec.strip_prefix("rgb:")?.split('/');
    let mut colour = [0; 3];
    for component in &mut colour {
        let digits = parts.next()?;
        if !(1..=4).contains(&digits.len()) {
            return None;
        }
        let value = u32::from_str_radix(digits, 16).ok()?;
        *component = match digits.len() {
            1 => u8::try_from(value * 17).ok()?,
            length => u8::try_from(value >> (4 * (length - 2))).ok()?,
        };
    }
    parts.next().is_none().then_some(colour)
}

/// The colours redefined, by index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Palette {
    set: Vec<(u8, [u8; 3])>,
}

impl Palette {
    /// Carries out `CSI < params z` (see the module's text).
    pub(crate) fn apply(&mut self, params: &[u16]) {
        let byte = |value: u16| u8::try_from(value).ok();
        match params {
            [4, index, red, green, blue] => {
                let (Some(index), Some(red), Some(green), Some(blue)) =
                    (byte(*index), byte(*red), byte(*green), byte(*blue))
                else {
                    return;
                };
                self.set.retain(|(set, _)| *set != index);
                self.set.push((index, [red, green, blue]));
            }
            [104] => self.set.clear(),
            [104, indexes @ ..] => self
                .set
                .retain(|(set, _)| !indexes.contains(&u16::from(*set))),
            _ => {}
        }
    }

    /// Whether any colour is redefined.
    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The colour a cell of `colour` shows.
    pub(crate) fn shown(&self, colour: CellColor) -> CellColor {
        match colour {
            CellColor::Indexed(index) => self
                .set
                .iter()
                .find(|(set, _)| *set == index)
                .map_or(colour, |(_, [red, green, blue])| {
                    CellColor::Rgb(*red, *green, *blue)
                }),
            other => other,
        }
    }
}
