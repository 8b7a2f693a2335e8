//! Which words of a request ask for something, and whether it asks to be
//! told rather than to have something done.
//!
//! A verb under a negation is not asked for: "don't commit, just show me
//! the diff" names committing only to rule it out, and counting "commit"
//! there offered the commit tool with a ready call. A negation ("don't",
//! "never", "without", "instead of", "rather than", "no need to", "hold
//! off", "refrain from", a clause of "no" and one word: "no update") covers
//! the rest of its clause, up to a comma or other stop, or up to "but",
//! "just", "only" or "then", which turn to what is wanted.
//!
//! A lookup asks to be told even when it does not open with a question
//! word: "look up ...", "look at ...", "check whether ...", "see if ...",
//! "find out ...", "give me ...", "pull up ...", "do you ...", also after a polite opener
//! ("can you show me ...", "could you tell me ...").
//!
//! Two more kinds of words ask for nothing now. A subordinate clause, from
//! "before", "after", "if", "when", "once", "until", "unless" or "so that"
//! to the end of its clause, says when or why, not what to do: "before I
//! delete the old-site repo, show me its branches" asks to list branches,
//! and its delete is put off like a negated one; "delete it if it is
//! empty" still asks to delete. And a verb that says what the listener did
//! ("print all you remember", "what you've memorised"), unless a request
//! opens it ("can you delete ...").

/// Words that open a negation (after apostrophes are dropped).
const NEGATIONS: &[&str] = &[
    "not", "never", "without", "dont", "doesnt", "didnt", "shouldnt", "wont", "cannot", "cant",
    "avoid", "avoiding", "nor", "neither",
];

/// Words that open a subordinate clause: what it names is a condition or a
/// time, not what is asked ("so" counts before "that").
const SUBORDINATES: &[&str] = &[
    "before", "after", "if", "when", "whenever", "once", "until", "till", "unless",
];

/// Words that end a negation's reach: what follows is what is wanted.
const TURNS: &[&str] = &["but", "just", "only", "then", "instead"];

/// Subject forms of "you": the verb right after one tells what the
/// listener does or did ("all you remember"), not what is asked.
const YOU: &[&str] = &["you", "youve", "youd", "youll", "youre"];

/// Words before "you" that make the verb after it a request ("can you
/// delete ...", "please, would you add ...").
const ASKING: &[&str] = &[
    "can", "could", "would", "will", "wont", "please", "shall", "should", "must", "to",
];

/// Polite openers before the real request ("can you ...", "please ...").
const POLITE: &[&str] = &[
    "can", "could", "would", "will", "please", "kindly", "you", "u", "just", "quickly", "now",
    "first", "ok", "okay", "so", "hey", "hi",
];

/// A request's words split by whether a negation covers them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The words that ask for something, clause by clause (`". "` between).
    pub asked: String,
    /// The words a negation covers.
    pub negated: String,
}

/// Splits `text` into the words it asks for and those it negates.
pub fn split(text: &str) -> Split {
    let mut split = Split::default();
    for clause in clauses(text) {
        let words: Vec<String> = clause
            .split_whitespace()
            .map(|word| {
                word.chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
                    .collect::<String>()
            })
            .filter(|word| !word.is_empty())
            .collect();
        let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        // "..., first show me its pages", "...; for now, list them": what
        // earlier clauses asked for is put off.
        if comes_first(&lower) && !split.asked.is_empty() {
            let earlier = std::mem::take(&mut split.asked).replace(". ", " ");
            push(&mut split.negated, &earlier);
        }
        // A clause that states an intention or asks whether to act ("I'll
        // update it later", "should I close it?") asks for nothing now.
        let mut negating = puts_off(&lower);
        let mut asked = Vec::new();
        for (index, word) in words.iter().enumerate() {
            let this = lower[index].as_str();
            let next = lower.get(index + 1).map(String::as_str);
            let after = lower.get(index + 2).map(String::as_str);
            // "before deleting ...", "if I merge it": what the clause names
            // comes later, if at all. Not a question's "when did ..." or "if
            // any", nor "once" as "one time" at the clause's end.
            let later = (SUBORDINATES.contains(&this) && next.is_some_and(opens_a_clause))
                || (this == "so" && next == Some("that"));
            let opens = NEGATIONS.contains(&this)
                || later
                || (this == "instead" && next == Some("of"))
                || (this == "rather" && next == Some("than"))
                || (this == "no" && matches!(next, Some("need" | "changes" | "change")))
                // "just the count, no update": a clause of "no" and one word.
                || (index == 0 && this == "no" && next.is_some() && after.is_none())
                || (this == "do" && next == Some("not"))
                || (this == "hold" && next == Some("off"))
                || (this == "refrain" && next == Some("from"))
                || (this == "no" && next == Some("longer") && after.is_some());
            if opens {
                negating = true;
                push(&mut split.negated, word);
                continue;
            }
            if negating && TURNS.contains(&this) {
                negating = false;
            }
            // "roll it back, but first show me its versions": what comes
            // before "but first" is put off.
            if this == "but" && next == Some("first") {
                for earlier in asked.drain(..) {
                    push(&mut split.negated, earlier);
                }
            }
            let before = |back: usize| index.checked_sub(back).map_or("", |at| lower[at].as_str());
            let told = this != "to" && YOU.contains(&before(1)) && !ASKING.contains(&before(2));
            if negating {
                push(&mut split.negated, word);
            } else if !told {
                asked.push(word.as_str());
            }
        }
        if !asked.is_empty() {
            if !split.asked.is_empty() {
                split.asked.push_str(". ");
            }
            split.asked.push_str(&asked.join(" "));
        }
    }
    split
}

/// Whether a clause (its words, lower-cased) opens by saying it comes
/// before what was asked so far: "first ...", "but for now ...", "before
/// that ...", "in the meantime ...".
fn comes_first(lower: &[String]) -> bool {
    let opening: Vec<&str> = lower
        .iter()
        .map(String::as_str)
        .skip_while(|w| matches!(*w, "and" | "but" | "so" | "ok" | "okay" | "though"))
        .take(3)
        .collect();
    when_phrase(&opening).is_some()
}

/// How many words of `words` (lower-cased) make a phrase at its start that
/// says only when what follows comes: "first", "for now", "for the
/// moment", "before that", "in the meantime".
fn when_phrase(words: &[&str]) -> Option<usize> {
    match words {
        ["first" | "firstly", ..] => Some(1),
        ["for", "now", ..] | ["before", "that" | "then", ..] => Some(2),
        ["for", "the", "moment", ..] | ["in", "the", "meantime", ..] => Some(3),
        _ => None,
    }
}

/// The request's clauses: split at commas and brackets, and wherever a
/// sentence ends ([`sentences`]).
fn clauses(text: &str) -> Vec<&str> {
    split_at(text, false, |c| matches!(c, ',' | '(' | ')'))
}

/// The request's sentences: split at a full stop, question or exclamation
/// mark or colon that ends one (not the one in `notes.txt` or a URL), at
/// semicolons, line ends and dashes between words ("delete it - first show
/// me", not "feature-x"). Each keeps its closing mark, trimmed.
pub fn sentences(text: &str) -> Vec<&str> {
    split_at(text, true, |_| false)
        .into_iter()
        .map(str::trim)
        .filter(|sentence| !sentence.is_empty())
        .collect()
}

/// `text` split where a sentence ends, and at each character `also` picks.
/// A sentence's closing mark stays with it when `keep_marks`; any other
/// splitting character is dropped.
fn split_at(text: &str, keep_marks: bool, also: impl Fn(char) -> bool) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut previous = ' ';
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
        let ends_sentence = matches!(c, '.' | '!' | '?' | ':') && next_is_space;
        let dash = matches!(c, '\u{2014}' | '\u{2013}')
            || (c == '-' && previous.is_whitespace() && next_is_space);
        previous = c;
        let end = index + c.len_utf8();
        if ends_sentence || dash || matches!(c, ';' | '\n') || also(c) {
            parts.push(
                &text[start..if ends_sentence && keep_marks {
                    end
                } else {
                    index
                }],
            );
            start = end;
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Whether a clause (its words, lower-cased, apostrophes dropped) puts its
/// action off: it opens with an intention ("I'll", "I might", "I'm about
/// to", "thinking about", "planning to") or a question whether to act
/// ("should I", "do we need to"), or it says "later".
fn puts_off(lower: &[String]) -> bool {
    const INTENTIONS: &[&[&str]] = &[
        &["ill"],
        &["i", "will"],
        &["we", "will"],
        &["i", "might"],
        &["we", "might"],
        &["i", "may"],
        &["im", "about", "to"],
        &["i", "am", "about", "to"],
        &["were", "about", "to"],
        &["im", "going", "to"],
        &["i", "am", "going", "to"],
        &["were", "going", "to"],
        &["im", "gonna"],
        &["im", "planning"],
        &["i", "plan", "to"],
        &["we", "plan", "to"],
        &["planning", "to"],
        &["thinking", "about"],
        &["thinking", "of"],
        &["im", "thinking"],
        &["were", "thinking"],
        &["should", "i"],
        &["should", "we"],
        &["shall", "i"],
        &["shall", "we"],
        &["do", "i", "need", "to"],
        &["do", "we", "need", "to"],
        &["is", "it", "safe", "to"],
    ];
    let start = lower
        .iter()
        .position(|w| {
            !matches!(
                w.as_str(),
                "and" | "but" | "so" | "ok" | "okay" | "hmm" | "well"
            )
        })
        .unwrap_or(0);
    let opening = &lower[start..];
    let intends = INTENTIONS.iter().any(|words| {
        opening.len() >= words.len() && words.iter().zip(opening).all(|(w, o)| w == o)
    });
    let later = lower.iter().enumerate().any(|(at, w)| {
        matches!(w.as_str(), "later" | "eventually" | "someday")
            && lower.get(at + 1).is_none_or(|n| n != "than")
    });
    intends || later
}

/// Whether a word after "before", "if", "when" ... makes what follows a
/// clause of its own: a subject ("I", "the build") or a gerund ("before
/// deleting"). "before Monday" and "after v1.2" are times.
fn opens_a_clause(word: &str) -> bool {
    const SUBJECTS: &[&str] = &[
        "i", "im", "ive", "id", "ill", "we", "were", "weve", "you", "youre", "it", "its", "they",
        "theyre", "he", "she", "someone", "somebody", "anyone", "the", "my", "our", "your",
        "their", "this", "that", "these", "those", "there", "a", "an",
    ];
    SUBJECTS.contains(&word) || (word.len() > 4 && word.ends_with("ing"))
}

fn push(text: &mut String, word: &str) {
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(word);
}

/// Whether `text` has a word of negation anywhere ("don't click anything,
/// just ..."), whatever it negates.
pub fn negates(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|word| word.to_lowercase().replace('\'', ""))
        .any(|word| NEGATIONS.contains(&word.as_str()))
}

/// The request's first word past a polite opener ("please commit ..." ->
/// "commit"), lower-cased: the verb of an imperative.
pub fn opening_word(text: &str) -> Option<String> {
    opening_words(text).into_iter().next()
}

/// The request's words past a polite opener or a "for now", lower-cased,
/// apostrophes dropped.
pub fn opening_words(text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('\'', ""))
        .collect();
    // A polite word, or a phrase that only says when ("for now, just show
    // me ...", "in the meantime, tell me ..."), opens the request.
    let mut start = 0;
    loop {
        let rest: Vec<&str> = words[start..].iter().take(3).map(String::as_str).collect();
        let skip = when_phrase(&rest).or_else(|| {
            rest.first()
                .is_some_and(|w| POLITE.contains(w))
                .then_some(1)
        });
        match skip {
            Some(skip) => start += skip,
            None => break,
        }
    }
    words[start..].to_vec()
}

/// Whether the request opens as a lookup: it asks to be told, in words
/// other than a question word ("look up the owner of ...", "check whether
/// the build passed", "could you show me the log").
pub fn is_lookup(text: &str) -> bool {
    let words = opening_words(text);
    let first = words.first().map(String::as_str);
    let second = words.get(1).map(String::as_str);
    match (first, second) {
        // After a polite opener; at the start, a question word already
        // makes it a question (`action::is_question`).
        (Some("show" | "tell" | "what" | "which" | "who" | "whats"), _) => true,
        (Some("give"), Some("me" | "us")) => true,
        (Some("pull" | "bring" | "dig"), Some("up")) => true,
        (Some("do" | "does" | "did"), Some("you" | "i" | "we" | "they")) => true,
        (Some("look"), Some("up" | "at" | "into" | "over" | "through" | "for")) => true,
        (Some("check" | "see"), Some("if" | "whether" | "what" | "which" | "who" | "how")) => true,
        (Some("find"), Some("out")) => true,
        (Some("let"), Some("me")) => {
            matches!(words.get(2).map(String::as_str), Some("know" | "see"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_end_at_marks_semicolons_and_dashes_between_words() {
        assert_eq!(
            sentences("Delete it - first, show me v1.2? Then notes.txt; ok!\n"),
            ["Delete it", "first, show me v1.2?", "Then notes.txt", "ok!"]
        );
        assert_eq!(sentences("branch feature-x"), ["branch feature-x"]);
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn what_a_later_clause_puts_first_is_what_is_asked() {
        let s = split(
            "I want to delete the page 'Onboarding' (id 983421) eventually \u{2014} first show me its child pages.",
        );
        assert_eq!(s.asked, "first show me its child pages");
        assert!(s.negated.contains("delete"), "{}", s.negated);
        let s = split("archive the Q3 project, but for now list its issues");
        assert_eq!(s.asked, "but for now list its issues");
        let s = split("before I drop the table - show me its rows");
        assert_eq!(s.asked, "show me its rows");
        // A hyphen inside a word, and "first" with nothing asked before it.
        let s = split("first create branch feature-x, then commit");
        assert_eq!(s.asked, "first create branch feature-x. then commit");
        let s = split("delete the first three drafts");
        assert_eq!(s.asked, "delete the first three drafts");
    }

    #[test]
    fn a_negated_verb_is_not_asked_for() {
        let s = split("Don't commit anything, just show me the staged diff");
        assert_eq!(s.asked, "just show me the staged diff");
        assert_eq!(s.negated, "Dont commit anything");
        let s = split("show the files without deleting them");
        assert_eq!(s.asked, "show the files");
        assert_eq!(s.negated, "without deleting them");
        let s = split("instead of removing the entity, tell me its observations");
        assert_eq!(s.asked, "tell me its observations");
        let s = split("Hold off on sending my draft, just tell me which files are attached to it");
        assert_eq!(s.asked, "just tell me which files are attached to it");
        let s = split("do not push but list the branches");
        assert_eq!(s.asked, "but list the branches");
        let s = split("just the count, no update");
        assert_eq!(
            (s.asked.as_str(), s.negated.as_str()),
            ("just the count", "no update")
        );
        // "no" that does not make a clause of its own negates nothing.
        let s = split("list repos with no stars");
        assert_eq!(s.asked, "list repos with no stars");
        let s = split("no need to create anything, what entities exist?");
        assert_eq!(s.asked, "what entities exist");
        let s = split("before editing settings.json, print it");
        assert_eq!(s.asked, "print it");
        assert_eq!(s.negated, "before editing settings.json");
        // "before" without a gerund is a time, not an action put off.
        let s = split("list the commits before Monday");
        assert_eq!(s.asked, "list the commits before Monday");
    }

    #[test]
    fn a_subordinate_clause_asks_for_nothing() {
        let s = split("before I delete the acme/old-site repo, show me its branches");
        assert_eq!(s.asked, "show me its branches");
        assert_eq!(s.negated, "before I delete the acme/old-site repo");
        let s = split("Before I post the announcement show me the latest messages");
        assert_eq!(s.asked, "");
        let s = split("if the deploy fails, tell me; for now list the workers");
        assert_eq!(s.asked, "for now list the workers");
        let s = split("show the open PRs so that I can merge the ready ones");
        assert_eq!(s.asked, "show the open PRs");
        let s = split("once it is merged I will close the issue, what is its status");
        assert_eq!(s.asked, "what is its status");
        // The main clause still asks when the condition comes after it.
        let s = split("delete notes.txt if it is empty");
        assert_eq!(s.asked, "delete notes.txt");
        // An intention or a question whether to act asks for nothing now.
        let s = split("I want to unstar some junk later; for now just show me what I've starred");
        assert_eq!(s.asked, "for now just show me what Ive starred");
        let s = split("should I cancel their subscription? show me what cus_R9x8 has");
        assert_eq!(s.asked, "show me what cus_R9x8 has");
        let s = split("I'll update the wrangler config later, show me the current one");
        assert_eq!(s.asked, "show me the current one");
        let s = split("I'm about to edit /srv/app/config.yml; show me it first");
        assert_eq!(s.asked, "show me it first");
        let s = split("I want to roll back api-gateway but first show me its versions");
        assert_eq!(s.asked, "but first show me its versions");
        assert_eq!(s.negated, "I want to roll back api-gateway");
        let s = split("list the issues closed later than Monday");
        assert_eq!(s.asked, "list the issues closed later than Monday");
        // A time is not a clause.
        let s = split("list the commits after v1.2 until yesterday");
        assert_eq!(s.asked, "list the commits after v1.2 until yesterday");
    }

    #[test]
    fn what_the_listener_did_is_not_asked() {
        let s = split("just print all you remember");
        assert_eq!(s.asked, "just print all you");
        let s = split("give me the full picture of what you've memorised");
        assert_eq!(s.asked, "give me the full picture of what youve");
        // A request opens it: the verb is asked.
        let s = split("can you delete the file");
        assert_eq!(s.asked, "can you delete the file");
        let s = split("I want you to store it");
        assert_eq!(s.asked, "I want you to store it");
    }

    #[test]
    fn a_request_without_negation_is_asked_whole() {
        let s = split("delete the file notes.txt");
        assert_eq!(s.asked, "delete the file notes.txt");
        assert!(s.negated.is_empty());
        // "instead" alone turns to what is wanted.
        let s = split("do not merge it instead rebase it");
        assert_eq!(s.asked, "instead rebase it");
    }

    #[test]
    fn lookups_in_other_words_than_a_question_word() {
        for text in [
            "look up the owner of the repo",
            "look at the last commit",
            "check whether the branch exists",
            "see if there is a file named x",
            "find out who changed it",
            "could you show me the log",
            "can you tell me what changed",
            "for now just show me what I've starred",
            "in the meantime, tell me which tabs are open",
            "let me know whether the tests pass",
            "give me the full picture",
            "pull up my journal",
            "do you recall anybody who plays the cello",
        ] {
            assert!(is_lookup(text), "{text}");
        }
        for text in [
            "check out the branch main",
            "commit my changes",
            "please delete the file",
            "look",
        ] {
            assert!(!is_lookup(text), "{text}");
        }
    }
}
