//! Parsing and cleaning throughput of the stages every output byte goes through.
//! Run: `cargo bench --bench throughput`.

use std::time::Instant;

use oino::output::index::OutputIndex;
use oino::output::{CappedText, TextCleaner};
use oino::pty::TermSize;
use oino::screen::Screen;

fn lines(bytes: usize) -> Vec<u8> {
    let line =
        b"0123456789012345678901234567890123456789012345678901234567890123456789012345678\r\n";
    line.iter().copied().cycle().take(bytes).collect()
}

fn measure(label: &str, data: &[u8], mut stage: impl FnMut(&[u8])) {
    let start = Instant::now();
    for chunk in data.chunks(64 * 1024) {
        stage(chunk);
    }
    let seconds = start.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let mib = data.len() as f64 / f64::from(1 << 20);
    println!("{label:<40} {:>8.1} MiB/s", mib / seconds);
}

fn main() {
    let data = lines(64 << 20);
    for (cols, rows, scrollback) in [(80, 24, 1000), (200, 50, 1000), (80, 24, 0)] {
        let mut screen = Screen::new(TermSize::new(cols, rows), scrollback);
        measure(
            &format!("screen {cols}x{rows}, {scrollback} rows back, lazy"),
            &data,
            |chunk| {
                screen.feed(chunk);
            },
        );
        let mut screen = Screen::new(TermSize::new(cols, rows), scrollback);
        measure(
            &format!("screen {cols}x{rows}, {scrollback} rows back, looked at each chunk"),
            &data,
            |chunk| {
                screen.feed(chunk);
                let _ = screen.snapshot(0);
            },
        );
    }
    let mut cleaner = TextCleaner::new(/*width*/ 80);
    let mut text = CappedText::new(30_000);
    let mut scratch = String::new();
    measure("clean text + cap", &data, |chunk| {
        cleaner.push(chunk, &mut scratch);
        text.push(&scratch);
        scratch.clear();
    });
    let mut index = OutputIndex::default();
    measure("index: boundaries, lines", &data, |chunk| {
        index.record(chunk);
    });
}
