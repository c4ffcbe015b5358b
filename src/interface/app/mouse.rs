//! The mouse in a pane belongs to its program when the program asks for it: an event is written
//! to it as xterm reports it (the events and the encoding it turned on), at the pane's own
//! coordinates. A full-screen program that reads no mouse gets the wheel as arrow keys, as in
//! tmux and most terminals.

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::{App, Effect, Mode, list_row_entry};
use crate::screen::ScreenSnapshot;

use crate::screen::{MouseEncoding, MouseEvents, MouseReporting};

/// The report of `kind` at the pane's cell (`col`, `row`), zero-based, or `None` when the program
/// did not ask for events of that kind (or the position cannot be written in its encoding).
#[must_use]
pub fn report(
    reporting: MouseReporting,
    kind: MouseEventKind,
    modifiers: KeyModifiers,
    col: u16,
    row: u16,
) -> Option<Vec<u8>> {
    let button = |button: MouseButton| match button {
        MouseButton::Left => 0,
        MouseButton::Middle => 1,
        MouseButton::Right => 2,
    };
    // (button code, a release, a move)
    let (code, release, motion) = match kind {
        MouseEventKind::Down(pressed) => (button(pressed), false, false),
        MouseEventKind::Up(released) => (button(released), true, false),
        MouseEventKind::Drag(held) => (button(held), false, true),
        MouseEventKind::Moved => (3, false, true),
        MouseEventKind::ScrollUp => (64, false, false),
        MouseEventKind::ScrollDown => (65, false, false),
        MouseEventKind::ScrollLeft => (66, false, false),
        MouseEventKind::ScrollRight => (67, false, false),
    };
    let wanted = match reporting.events {
        MouseEvents::None => false,
        MouseEvents::Press => !release && !motion,
        MouseEvents::PressRelease => !motion,
        MouseEvents::ButtonMotion => kind != MouseEventKind::Moved,
        MouseEvents::AnyMotion => true,
    };
    if !wanted {
        return None;
    }
    let mut code: u32 = code + if motion { 32 } else { 0 };
    // X10 reports carry no modifiers.
    if reporting.events != MouseEvents::Press {
        for (held, bit) in [
            (KeyModifiers::SHIFT, 4),
            (KeyModifiers::ALT, 8),
            (KeyModifiers::CONTROL, 16),
        ] {
            if modifiers.contains(held) {
                code += bit;
            }
        }
    }
    let (x, y) = (u32::from(col) + 1, u32::from(row) + 1);
    if reporting.encoding == MouseEncoding::Sgr {
        let end = if release { 'm' } else { 'M' };
        return Some(format!("\x1b[<{code};{x};{y}{end}").into_bytes());
    }
    // The older encodings have no button for a release: 3 says "released".
    if release {
        code = (code & !3) | 3;
    }
    let mut bytes = b"\x1b[M".to_vec();
    for value in [code, x, y] {
        let value = value + 32;
        match reporting.encoding {
            MouseEncoding::Utf8 => {
                let character = char::from_u32(value).filter(|_| value < 2048)?;
                let mut buffer = [0; 4];
                bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
            }
            _ => bytes.push(u8::try_from(value).ok()?),
        }
    }
    Some(bytes)
}

/// The wheel as arrow keys, `rows` of them: what a full-screen program without mouse reporting
/// gets.
#[must_use]
pub(crate) fn wheel_as_arrows(up: bool, application_cursor: bool, rows: usize) -> Vec<u8> {
    let arrow: &[u8] = match (up, application_cursor) {
        (true, true) => b"\x1bOA",
        (true, false) => b"\x1b[A",
        (false, true) => b"\x1bOB",
        (false, false) => b"\x1b[B",
    };
    arrow.repeat(rows)
}

/// Rows the mouse wheel scrolls.
pub(super) const WHEEL_ROWS: usize = 3;

impl App {
    /// The mouse reports the terminal should send: all of them as the settings allow; attached
    /// to one program, only those it asks for, while it asks (a shell never gets mouse tracking
    /// it did not turn on).
    #[must_use]
    pub(crate) fn wants_mouse(&self) -> crate::screen::MouseEvents {
        use crate::screen::MouseEvents;
        match (&self.attached, self.settings.mouse) {
            (_, false) => MouseEvents::None,
            (Some(_), true) => self
                .pane
                .as_ref()
                .map_or(MouseEvents::None, |pane| pane.mouse.events),
            (None, true) => MouseEvents::AnyMotion,
        }
    }

    pub(super) fn handle_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let Some(layout) = self.layout() else {
            return Vec::new();
        };
        let position = ratatui::layout::Position::new(mouse.column, mouse.row);
        // A click on another pane of a split view moves the focus there.
        if let (MouseEventKind::Down(_), false) = (mouse.kind, self.mouse_held) {
            let clicked = self.pane_areas().into_iter().find(|area| {
                (area.pane.contains(position) || area.header.contains(position))
                    && self.selected.as_deref() != Some(area.id.as_str())
            });
            if let Some(area) = clicked {
                self.select_id(area.id);
                return Vec::new();
            }
        }
        let held = self.mouse_held
            && matches!(mouse.kind, MouseEventKind::Drag(_) | MouseEventKind::Up(_));
        if let Some(effects) = self
            .live_program(held || layout.pane.contains(position))
            .and_then(|(id, pane)| {
                let pane_area = layout.pane;
                let col = mouse.column.clamp(pane_area.left(), pane_area.right() - 1) - pane_area.x;
                let row = mouse.row.clamp(pane_area.top(), pane_area.bottom() - 1) - pane_area.y;
                let bytes = program_mouse(pane, mouse, col, row, self.mode == Mode::Focus)?;
                Some(if bytes.is_empty() {
                    Vec::new()
                } else {
                    vec![Effect::Write { id, bytes }]
                })
            })
        {
            self.mouse_held = match mouse.kind {
                MouseEventKind::Down(_) => !effects.is_empty(),
                MouseEventKind::Up(_) => false,
                _ => self.mouse_held,
            };
            return effects;
        }
        self.mouse_held = false;
        // A drag in the pane selects; letting go copies.
        let in_pane = layout.pane.contains(position);
        let spot = (
            mouse.row.clamp(layout.pane.top(), layout.pane.bottom() - 1) - layout.pane.y,
            mouse
                .column
                .clamp(layout.pane.left(), layout.pane.right() - 1)
                - layout.pane.x,
        );
        if let Some(effects) = self.select_by_mouse(mouse.kind, in_pane, spot) {
            return effects;
        }
        match mouse.kind {
            // A full-screen program's output makes no history to look back on.
            MouseEventKind::ScrollUp
                if self
                    .live_program(true)
                    .is_some_and(|(_, pane)| pane.alternate_screen) => {}
            MouseEventKind::ScrollUp => self.scroll = self.scroll.saturating_add(WHEEL_ROWS),
            MouseEventKind::ScrollDown => self.scroll = self.scroll.saturating_sub(WHEEL_ROWS),
            MouseEventKind::Down(MouseButton::Left)
                if self.mode == Mode::Normal
                    && layout
                        .list
                        .contains(ratatui::layout::Position::new(mouse.column, mouse.row)) =>
            {
                if let Some(index) = list_row_entry(self, layout, mouse.row) {
                    self.select_index(index);
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The selected entry's id and live screen, when it is running, `inside` its pane, and
    /// the screen shown is its own (not one fetched before the selection moved).
    pub(super) fn live_program(&self, inside: bool) -> Option<(String, &ScreenSnapshot)> {
        let entry = self.selected_entry()?;
        let own = self.pane_of.as_deref() == Some(entry.id.as_str());
        (inside && own && self.scroll == 0 && entry.state.is_running())
            .then(|| self.pane.as_ref().map(|pane| (entry.id.clone(), pane)))
            .flatten()
    }
}

/// What a mouse event in a live pane writes to its program: `None` when the event is oino's
/// (the program reads no mouse and is not full-screen, or a click outside focus); nothing when
/// the program takes it but is told nothing (a kind it did not ask for).
fn program_mouse(
    pane: &ScreenSnapshot,
    mouse: MouseEvent,
    col: u16,
    row: u16,
    focused: bool,
) -> Option<Vec<u8>> {
    let wheel = match mouse.kind {
        MouseEventKind::ScrollUp => Some(true),
        MouseEventKind::ScrollDown => Some(false),
        _ => None,
    };
    // Clicks and moves are the program's once it has the keys too; the wheel always.
    if !(focused || wheel.is_some()) {
        return None;
    }
    if pane.mouse.events != crate::screen::MouseEvents::None {
        return Some(report(pane.mouse, mouse.kind, mouse.modifiers, col, row).unwrap_or_default());
    }
    match wheel {
        Some(up) if pane.alternate_screen => {
            Some(wheel_as_arrows(up, pane.application_cursor, WHEEL_ROWS))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporting(events: MouseEvents, encoding: MouseEncoding) -> MouseReporting {
        MouseReporting { events, encoding }
    }

    #[test]
    fn sgr_reports_presses_releases_wheel_and_modifiers() {
        let sgr = reporting(MouseEvents::PressRelease, MouseEncoding::Sgr);
        let none = KeyModifiers::NONE;
        let left = MouseButton::Left;
        assert_eq!(
            report(sgr, MouseEventKind::Down(left), none, 4, 9).as_deref(),
            Some(&b"\x1b[<0;5;10M"[..])
        );
        assert_eq!(
            report(sgr, MouseEventKind::Up(MouseButton::Right), none, 0, 0).as_deref(),
            Some(&b"\x1b[<2;1;1m"[..])
        );
        assert_eq!(
            report(
                sgr,
                MouseEventKind::ScrollDown,
                KeyModifiers::CONTROL,
                299,
                99
            )
            .as_deref(),
            Some(&b"\x1b[<81;300;100M"[..])
        );
        // Moves are not asked for at this level.
        assert_eq!(report(sgr, MouseEventKind::Drag(left), none, 1, 1), None);
        assert_eq!(report(sgr, MouseEventKind::Moved, none, 1, 1), None);
    }

    #[test]
    fn each_level_reports_what_it_asked_for() {
        let none = KeyModifiers::NONE;
        let at = |events, kind| report(reporting(events, MouseEncoding::Sgr), kind, none, 0, 0);
        let (down, up) = (
            MouseEventKind::Down(MouseButton::Left),
            MouseEventKind::Up(MouseButton::Left),
        );
        let drag = MouseEventKind::Drag(MouseButton::Left);
        assert_eq!(at(MouseEvents::None, down), None);
        assert!(at(MouseEvents::Press, down).is_some());
        assert_eq!(at(MouseEvents::Press, up), None);
        assert_eq!(at(MouseEvents::PressRelease, drag), None);
        assert_eq!(
            at(MouseEvents::ButtonMotion, drag).as_deref(),
            Some(&b"\x1b[<32;1;1M"[..])
        );
        assert_eq!(at(MouseEvents::ButtonMotion, MouseEventKind::Moved), None);
        assert_eq!(
            at(MouseEvents::AnyMotion, MouseEventKind::Moved).as_deref(),
            Some(&b"\x1b[<35;1;1M"[..])
        );
        // X10 carries no modifiers.
        let x10 = reporting(MouseEvents::Press, MouseEncoding::Default);
        assert_eq!(
            report(x10, down, KeyModifiers::SHIFT, 0, 0).as_deref(),
            Some(&b"\x1b[M\x20\x21\x21"[..])
        );
    }

    #[test]
    fn the_older_encodings_write_bytes_or_utf8_and_releases_as_button_3() {
        let normal = reporting(MouseEvents::PressRelease, MouseEncoding::Default);
        let none = KeyModifiers::NONE;
        assert_eq!(
            report(
                normal,
                MouseEventKind::Down(MouseButton::Middle),
                none,
                9,
                19
            )
            .as_deref(),
            Some(&[0x1b, b'[', b'M', 32 + 1, 32 + 10, 32 + 20][..])
        );
        assert_eq!(
            report(normal, MouseEventKind::Up(MouseButton::Middle), none, 0, 0).as_deref(),
            Some(&[0x1b, b'[', b'M', 32 + 3, 33, 33][..])
        );
        assert_eq!(
            report(normal, MouseEventKind::ScrollUp, none, 0, 0).as_deref(),
            Some(&[0x1b, b'[', b'M', 32 + 64, 33, 33][..])
        );
        // Past column 223 a byte cannot say where: nothing is sent.
        assert_eq!(report(normal, MouseEventKind::ScrollUp, none, 230, 0), None);
        let utf8 = reporting(MouseEvents::PressRelease, MouseEncoding::Utf8);
        let far =
            report(utf8, MouseEventKind::Down(MouseButton::Left), none, 299, 0).expect("sent");
        assert_eq!(far, "\x1b[M\u{20}\u{14c}\u{21}".as_bytes());
    }

    #[test]
    fn the_wheel_as_arrows_follows_the_cursor_key_mode() {
        assert_eq!(wheel_as_arrows(true, false, 2), b"\x1b[A\x1b[A");
        assert_eq!(wheel_as_arrows(false, true, 1), b"\x1bOB");
    }
}
