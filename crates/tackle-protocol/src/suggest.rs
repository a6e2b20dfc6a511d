//! "Did you mean": the known names closest to one that was not found.

/// Up to three of `names` closest to `name` (Jaro-Winkler, case-insensitive; a name that
/// contains the other, or is contained in it, counts as close), best first, ties by name.
/// Names scoring below `min_score` (0..1) are left out.
pub fn nearest<'a>(
    name: &str,
    names: impl IntoIterator<Item = &'a str>,
    min_score: f64,
) -> Vec<String> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .map(|candidate| {
            let lower = candidate.to_lowercase();
            let mut score = strsim::jaro_winkler(&wanted, &lower);
            if !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower)) {
                score = score.max(0.9);
            }
            (score, candidate)
        })
        .filter(|(score, _)| *score >= min_score)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// The one wording of a suggestion, for every front end and tool: `did you mean a, b?`; empty
/// when there is nothing to suggest. Callers put it after their own sentence (`; ` or `. `).
pub fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("did you mean {}?", suggestions.join(", "))
    }
}

/// `; did you mean a, b?` after a message, or nothing when there is nothing to suggest.
pub fn hint(suggestions: &[String]) -> String {
    match did_you_mean(suggestions) {
        s if s.is_empty() => s,
        s => format!("; {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_names_come_first_and_strangers_not_at_all() {
        let names = ["read_file", "write_file", "list_files", "shell"];
        assert_eq!(nearest("read_fil", names, 0.75)[0], "read_file");
        assert_eq!(nearest("READ_FILE", names, 0.75)[0], "read_file");
        assert!(nearest("zzzzqqq", names, 0.75).is_empty());
        assert!(nearest("file", names, 0.75).len() <= 3);
    }

    #[test]
    fn one_wording_for_every_suggestion() {
        let near = nearest("read_fil", ["read_file", "shell"], 0.75);
        assert_eq!(hint(&near), "; did you mean read_file?");
        assert_eq!(
            did_you_mean(&["a".into(), "b".into()]),
            "did you mean a, b?"
        );
        assert_eq!(hint(&[]), "");
    }
}
