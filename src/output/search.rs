//! Searching clean lines the way a person types a query: smart case (a query with capitals is
//! matched exactly, one without ignores case).

/// Whether `line` contains `query`: case-insensitive unless the query has capitals.
#[must_use]
pub(crate) fn matches_query(line: &str, query: &str) -> bool {
    match_ranges(line, query).next().is_some()
}

/// Where `query` occurs in `line`, as char ranges (smart case).
pub(crate) fn match_ranges<'a>(
    line: &'a str,
    query: &'a str,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
    let fold = !query.chars().any(char::is_uppercase);
    let haystack: Vec<char> = if fold {
        line.chars().flat_map(char::to_lowercase).collect()
    } else {
        line.chars().collect()
    };
    let needle: Vec<char> = query.chars().collect();
    let width = needle.len();
    (0..haystack.len().saturating_sub(width.saturating_sub(1)))
        .filter(move |&start| width > 0 && haystack[start..start + width] == needle[..])
        .map(move |start| start..start + width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_is_smart_case() {
        assert!(matches_query("Error: disk full", "error"));
        assert!(!matches_query("error: disk full", "Error"));
        assert_eq!(
            match_ranges("abcabc", "bc").collect::<Vec<_>>(),
            vec![1..3, 4..6]
        );
        assert_eq!(match_ranges("ab", "abc").count(), 0);
    }
}
