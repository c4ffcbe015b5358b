//! Which known word a mistyped one meant: a subcommand (`oino lss`), a key of a project file
//! or of the settings (`restrat`).

/// The most edits between a word and the one it is taken for.
const MAX_EDITS: usize = 2;

/// The word of `known` that `word` is likely a mistyped form of: one at most two edits away (and
/// nearer than the word is long), or one it begins; the nearest, then the shortest.
#[must_use]
pub(crate) fn meant<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .filter(|name| **name != word)
        .map(|name| (edits(word, name), *name))
        .filter(|(edits, name)| {
            (*edits <= MAX_EDITS && *edits < word.chars().count())
                || (word.chars().count() >= 2 && name.starts_with(word))
        })
        .min_by_key(|(edits, name)| (*edits, name.len()))
        .map(|(_, name)| name)
}

/// Levenshtein's distance: insertions, deletions and substitutions of characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, a_char) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, b_char) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(a_char != *b_char));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A parser's `unknown field `restrat`, expected one of `cmd`, …` said as a person would:
/// `unknown key `restrat`: did you mean `restart`?`; other messages as they are.
#[must_use]
pub(crate) fn unknown_key(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_owned();
    };
    let Some((word, known)) = rest.split_once('`') else {
        return message.to_owned();
    };
    let known: Vec<&str> = known.split('`').skip(1).step_by(2).collect();
    match meant(word, &known) {
        Some(meant) => format!("unknown key `{word}`: did you mean `{meant}`?"),
        None => format!("unknown key `{word}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_said_with_the_one_meant() {
        assert_eq!(
            unknown_key("unknown field `restrat`, expected one of `cmd`, `restart`, `ready`"),
            "unknown key `restrat`: did you mean `restart`?"
        );
        assert_eq!(
            unknown_key("unknown field `zzzzzz`, expected `cmd` or `cwd`"),
            "unknown key `zzzzzz`"
        );
        assert_eq!(unknown_key("invalid type: string"), "invalid type: string");
    }
}
