//! Searching clean lines the way a person types a pattern: a regular expression when it parses
//! as one, else its text as it is; smart case (a pattern with a capital letter is matched
//! exactly, one without ignores case). The server searches a log with it and the interface marks
//! the matches in view with the same one, so both agree on what matches.

use std::ops::Range;

use regex::{Regex, RegexBuilder};

/// A pattern ready to search lines.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// The pattern as typed.
    pattern: String,
    /// `None` only for a pattern too large to compile even as text: it matches nothing.
    regex: Option<Regex>,
    /// The pattern is no regular expression: its text is searched.
    as_text: bool,
}

/// Largest compiled pattern, in bytes (the regex crate's default is 10 MiB: a typed pattern
/// needs far less, and a crafted one is refused sooner).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

impl Matcher {
    /// The pattern as a regular expression, or as text when it does not parse as one.
    #[must_use]
    pub fn new(pattern: &str) -> Self {
        let build = |source: &str, exact: bool| {
            RegexBuilder::new(source)
                .case_insensitive(!exact)
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
                .ok()
        };
        if let Some(regex) = build(pattern, has_capital(pattern)) {
            return Self {
                pattern: pattern.to_owned(),
                regex: Some(regex),
                as_text: false,
            };
        }
        // Searched as text, every capital counts (a backslash is a character like any other).
        let exact = pattern.chars().any(char::is_uppercase);
        Self {
            pattern: pattern.to_owned(),
            regex: build(&regex::escape(pattern), exact),
            as_text: true,
        }
    }

    /// The pattern as typed.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern did not parse as a regular expression and is searched as text.
    #[must_use]
    pub fn is_text(&self) -> bool {
        self.as_text
    }

    /// Whether `line` has a match.
    #[must_use]
    pub fn is_match(&self, line: &str) -> bool {
        self.regex
            .as_ref()
            .is_some_and(|regex| regex.is_match(line))
    }

    /// Where the matches are in `line`, as byte ranges (empty matches are left out: there is
    /// nothing to mark).
    pub fn ranges<'a>(&'a self, line: &'a str) -> impl Iterator<Item = Range<usize>> + 'a {
        self.regex
            .iter()
            .flat_map(move |regex| regex.find_iter(line))
            .map(|found| found.range())
            .filter(|range| !range.is_empty())
    }
}

/// Whether a regular expression has a capital letter of its own: the letter of an escape
/// (`\S`, `\W`, `\p{Lu}`) and the hex digits of a code (`\xFF`, `\u{00C9}`) are not.
fn has_capital(pattern: &str) -> bool {
    let mut chars = pattern.chars().peekable();
    while let Some(character) = chars.next() {
        if character == '\\' {
            match chars.next() {
                // A class by name (`\pL`, `\p{Lu}`) or a code (`\x{FF}`, `\u{00C9}`).
                Some('p' | 'P' | 'x' | 'u' | 'U') if chars.peek() == Some(&'{') => {
                    chars.by_ref().find(|&c| c == '}');
                }
                // A code in plain hex digits, as many as it takes: `\xFF`, `\u00C9`.
                Some(kind @ ('x' | 'u' | 'U')) => {
                    let digits = match kind {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    for _ in 0..digits {
                        chars.next_if(char::is_ascii_hexdigit);
                    }
                }
                _ => {}
            }
            continue;
        }
        if character.is_uppercase() {
            return true;
        }
    }
    false
}

/// What a search of a whole output found: the matching line nearest to where it started, in the
/// direction asked, and where that line ranks among all the matching lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchHit {
    /// The line found (0 is the oldest), if any.
    pub line: Option<u64>,
    /// Its rank among the matching lines, the newest first (1 is the newest); 0 when none.
    pub rank: u64,
    /// How many lines match in the whole output.
    pub matches: u64,
}

/// Counts the matching lines of an output, line by line, and keeps the one nearest to `from`:
/// before it, or after it when `newer`.
#[derive(Debug)]
pub(crate) struct HitCounter {
    from: u64,
    newer: bool,
    line: Option<u64>,
    /// Matching lines up to and including the one found.
    through_line: u64,
    matches: u64,
}

impl HitCounter {
    pub(crate) fn new(from: u64, newer: bool) -> Self {
        Self {
            from,
            newer,
            line: None,
            through_line: 0,
            matches: 0,
        }
    }

    /// Line `number` matches (lines come oldest first).
    pub(crate) fn matched(&mut self, number: u64) {
        self.matches += 1;
        let wanted = if self.newer {
            number > self.from && self.line.is_none()
        } else {
            number < self.from
        };
        if wanted {
            self.line = Some(number);
            self.through_line = self.matches;
        }
    }

    pub(crate) fn hit(&self) -> SearchHit {
        SearchHit {
            line: self.line,
            rank: self
                .line
                .map_or(0, |_| self.matches - self.through_line + 1),
            matches: self.matches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(pattern: &str, line: &str) -> Vec<Range<usize>> {
        Matcher::new(pattern).ranges(line).collect()
    }

    #[test]
    fn search_is_smart_case() {
        assert!(Matcher::new("error").is_match("Error: disk full"));
        assert!(!Matcher::new("Error").is_match("error: disk full"));
        assert!(Matcher::new("Error").is_match("Error: disk full"));
        // A capital that is an escape's letter is no capital: `\S` still ignores case.
        assert!(Matcher::new(r"file\S").is_match("FILE: x"));
        assert!(Matcher::new(r"\p{Lu}ile").is_match("FILE"));
        assert!(!Matcher::new(r"\p{Lu}File").is_match("FILE"));
        // Nor are the hex digits of a code: `\x41` is `A`, matched in any case.
        assert!(Matcher::new(r"caf\u{00E9}").is_match("CAFÉ"));
        assert!(Matcher::new(r"\x41b").is_match("AB"));
        assert!(!Matcher::new(r"\x41B").is_match("ab"));
        assert_eq!(ranges("bc", "abcaBc"), vec![1..3, 4..6]);
        assert_eq!(ranges("abc", "ab"), Vec::<Range<usize>>::new());
    }

    #[test]
    fn a_pattern_is_a_regular_expression() {
        let matcher = Matcher::new("missing[0-9]");
        assert!(!matcher.is_text());
        assert!(matcher.is_match("error: missing7 files"));
        assert!(!matcher.is_match("error: missing files"));
        assert_eq!(ranges("o+", "foo bor"), vec![1..3, 5..6]);
        assert_eq!(ranges("^line 1$", "line 1"), vec![0..6]);
        assert!(!Matcher::new("^line 1$").is_match("line 12"));
        // Empty matches mark nothing, though the line matches.
        assert!(Matcher::new("x*").is_match("abc"));
        assert_eq!(ranges("x*", "abc"), Vec::<Range<usize>>::new());
    }

    #[test]
    fn a_pattern_that_is_no_regular_expression_is_searched_as_text() {
        let matcher = Matcher::new("foo(");
        assert!(matcher.is_text());
        assert!(matcher.is_match("call foo(1)"));
        assert!(!matcher.is_match("call foo 1"));
        assert_eq!(ranges("foo(", "a FOO(b"), vec![2..6]);
        // As text, every capital counts.
        let matcher = Matcher::new(r"C:\Users[");
        assert!(matcher.is_text());
        assert!(matcher.is_match(r"in C:\Users[0]"));
        assert!(!matcher.is_match(r"in c:\users[0]"));
    }

    /// Lines `numbers` match; the hit from `from`.
    fn hit(numbers: &[u64], from: u64, newer: bool) -> SearchHit {
        let mut counter = HitCounter::new(from, newer);
        for &number in numbers {
            counter.matched(number);
        }
        counter.hit()
    }

    #[test]
    fn a_hit_is_the_nearest_match_and_ranks_newest_first() {
        let lines = [2, 5, 9, 14];
        // From the live end back: the newest, first of four.
        let newest = SearchHit {
            line: Some(14),
            rank: 1,
            matches: 4,
        };
        assert_eq!(hit(&lines, 20, false), newest);
        assert_eq!(
            hit(&lines, 14, false),
            SearchHit {
                line: Some(9),
                rank: 2,
                matches: 4
            }
        );
        assert_eq!(
            hit(&lines, 2, true),
            SearchHit {
                line: Some(5),
                rank: 3,
                matches: 4
            }
        );
        assert_eq!(hit(&lines, 9, true).line, Some(14));
        // None further: the count is still told.
        let none = SearchHit {
            line: None,
            rank: 0,
            matches: 4,
        };
        assert_eq!(hit(&lines, 2, false), none);
        assert_eq!(hit(&lines, 14, true), none);
        assert_eq!(hit(&[], 5, false), SearchHit::default());
    }
}
