//! What a shell command does that the guard refuses: running the checker
//! with `--approve`, and plainly rewriting files (redirection, `tee`,
//! `sed -i`, `perl -i`). Pure, and best effort by design: it reads the
//! command with the project's shell-words tokenizer, never expands
//! variables and never runs anything, so a command that builds its words
//! at run time, or hides them in another language, is not seen.
//!
//! A command is split at `;`, `&&`, `||`, `|` and `&` into simple commands;
//! parentheses are looked through, so `$(which gate-check) --approve` is
//! one. Within a simple command the checker may be preceded by anything
//! (`env X=1`, `sudo`, `npx`, `node`), and its `--approve` may come
//! anywhere after it. The text given to `sh -c` (and `bash -lc`, `su -c`),
//! `eval`, `env -S` and a here-string is read the same way, a few levels
//! deep.

use crate::shell_words::{tokenize, Token};

/// How deep the guard follows command text handed to another shell.
const MAX_DEPTH: usize = 4;

/// Programs that run their `-c` argument as a command.
const SHELLS: [&str; 10] = ["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "su"];

/// The names the checker goes by: this binary and the Node tool's script.
const CHECKERS: [&str; 4] = ["gate-check", "gate-check.exe", "gate-check.mjs", "gate-check.js"];

/// What a command was seen to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// It runs the checker with `--approve`.
    pub approves: bool,
    /// The words naming files it rewrites, each with how.
    pub writes: Vec<(String, Writer)>,
}

/// How a command rewrites a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Redirection,
    Tee,
    Sed,
    Perl,
}

impl Writer {
    pub fn describe(self) -> &'static str {
        match self {
            Writer::Redirection => "an output redirection",
            Writer::Tee => "tee",
            Writer::Sed => "sed -i",
            Writer::Perl => "perl -i",
        }
    }
}

/// What `command` does, as far as the guard reads it.
pub fn analyze(command: &str) -> Findings {
    let mut findings = Findings::default();
    read(command, 0, &mut findings);
    findings
}

fn read(command: &str, depth: usize, findings: &mut Findings) {
    if depth > MAX_DEPTH {
        return;
    }
    for simple in simple_commands(&tokenize(command)) {
        read_simple(&simple, depth, findings);
    }
}

/// The simple commands of a token list: split at every control operator,
/// with parentheses dropped and redirections kept.
fn simple_commands(tokens: &[Token]) -> Vec<Vec<&Token>> {
    let mut commands = vec![Vec::new()];
    for token in tokens {
        match token {
            Token::Operator(op) if op == "(" || op == ")" => {}
            Token::Operator(op) if !op.contains(['<', '>']) => commands.push(Vec::new()),
            _ => commands.last_mut().expect("never empty").push(token),
        }
    }
    commands.retain(|command| !command.is_empty());
    commands
}

/// A word's program name: its last path component, without the quoting
/// characters of a command substitution around it.
fn program(word: &str) -> String {
    let word = word.trim_matches(|c| matches!(c, '`' | '$' | '(' | ')' | '"' | '\''));
    word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase()
}

fn is_option(word: &str) -> bool {
    word.starts_with('-') && word.len() > 1
}

/// `-c`, `-lc`, `-ec`: a shell option cluster that takes a command.
fn takes_command(word: &str) -> bool {
    word.strip_prefix('-').is_some_and(|flags| {
        !flags.starts_with('-') && flags.contains('c') && flags.chars().all(|c| c.is_ascii_alphabetic())
    })
}

/// `sed` edits in place with `-i[SUFFIX]` (alone or in a cluster such as
/// `-ni`) or `--in-place[=SUFFIX]`.
fn sed_in_place(word: &str) -> bool {
    word == "--in-place"
        || word.starts_with("--in-place=")
        || word.strip_prefix('-').is_some_and(|flags| !flags.starts_with('-') && flags.contains('i'))
}

/// `perl` edits in place with `-i`, alone or after flags that take no
/// argument (`-pi`, `-0pi`, `-lpi.bak`).
fn perl_in_place(word: &str) -> bool {
    word.strip_prefix('-').is_some_and(|flags| {
        flags.find('i').is_some_and(|at| flags[..at].chars().all(|c| c.is_ascii_digit() || "aplnsTtuUWwX".contains(c)))
    })
}

fn read_simple(tokens: &[&Token], depth: usize, findings: &mut Findings) {
    let words: Vec<&str> = tokens
        .iter()
        .filter_map(|token| match token {
            Token::Word(word) => Some(word.as_str()),
            Token::Operator(_) => None,
        })
        .collect();
    let programs: Vec<String> = words.iter().map(|word| program(word)).collect();
    let at = |name: &[&str]| programs.iter().position(|program| name.contains(&program.as_str()));

    if let Some(checker) = at(&CHECKERS) {
        findings.approves |=
            words[checker + 1..].iter().any(|word| *word == "--approve" || word.starts_with("--approve="));
    }
    let operands_after = |start: usize| words[start + 1..].iter().filter(|word| !is_option(word));
    if let Some(tee) = at(&["tee"]) {
        findings.writes.extend(operands_after(tee).map(|word| (word.to_string(), Writer::Tee)));
    }
    if let Some(sed) = at(&["sed", "gsed"]) {
        if words[sed + 1..].iter().any(|word| sed_in_place(word)) {
            findings.writes.extend(operands_after(sed).map(|word| (word.to_string(), Writer::Sed)));
        }
    }
    if let Some(perl) = programs.iter().position(|program| program.starts_with("perl")) {
        if words[perl + 1..].iter().any(|word| perl_in_place(word)) {
            findings.writes.extend(operands_after(perl).map(|word| (word.to_string(), Writer::Perl)));
        }
    }
    read_redirections(tokens, depth, at(&SHELLS).is_some(), findings);

    // Command text handed to another shell is read as a command too.
    if let Some(shell) = at(&SHELLS) {
        for pair in words[shell + 1..].windows(2) {
            if takes_command(pair[0]) {
                read(pair[1], depth + 1, findings);
            }
        }
    }
    if let Some(eval) = at(&["eval"]) {
        read(&words[eval + 1..].join(" "), depth + 1, findings);
    }
    if let Some(env) = at(&["env"]) {
        let rest = &words[env + 1..];
        for (index, word) in rest.iter().enumerate() {
            let split = match *word {
                "-S" | "--split-string" => rest.get(index + 1).copied(),
                other => other.strip_prefix("--split-string=").or_else(|| other.strip_prefix("-S")),
            };
            if let Some(text) = split.filter(|text| !text.is_empty()) {
                read(text, depth + 1, findings);
            }
        }
    }
}

/// The files named after `>`, `>>`, `&>`, `>|` (not a `>&2` duplication),
/// and the text a shell reads from a here-string.
fn read_redirections(tokens: &[&Token], depth: usize, runs_a_shell: bool, findings: &mut Findings) {
    for pair in tokens.windows(2) {
        let (Token::Operator(op), Token::Word(target)) = (pair[0], pair[1]) else {
            continue;
        };
        if op.contains('>') {
            let duplicates = op.ends_with('&') && (target == "-" || target.chars().all(|c| c.is_ascii_digit()));
            if !duplicates {
                findings.writes.push((target.clone(), Writer::Redirection));
            }
        } else if op == "<<<" && runs_a_shell {
            read(target, depth + 1, findings);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approves(command: &str) -> bool {
        analyze(command).approves
    }

    fn written(command: &str) -> Vec<(String, Writer)> {
        analyze(command).writes
    }

    #[test]
    fn self_approval_is_seen_through_wrappers_quoting_and_nesting() {
        for command in [
            "gate-check --approve",
            "env X=1 gate-check --reverify --approve GATES.md",
            "sh -c 'gate-check --approve'",
            "node ~/.claude/skills/unlazy/scripts/gate-check.mjs --approve",
            "cd sub && /usr/local/bin/gate-check --scope api --approve",
            "\"gate-check\" \"--approve\"",
            "g''ate-check --appro\"ve\"",
            "npx gate-check -- --approve",
            "$(which gate-check) --approve",
            "bash -lc \"sudo -u me gate-check --approve=yes\"",
            "eval 'gate-check --approve'",
            "env -S 'gate-check --approve'",
            "bash <<< 'gate-check --approve'",
            "true; (gate-check --approve) | cat",
            "echo start\ngate-check --approve",
            "sh -c \"bash -c 'sh -c \\\"gate-check --approve\\\"'\"",
        ] {
            assert!(approves(command), "{command}");
        }
    }

    #[test]
    fn everything_else_is_not_approval() {
        for command in [
            "gate-check --status",
            "gate-check",
            "gate-check --reverify GATES.md",
            "pytest -q",
            "--approve gate-check",
            "gate-check --status && echo --approve",
            "git commit -m 'ask the person to run gate-check --approve'",
            "grep -- --approve gate-check.md",
            "my-gate-check --approve",
            "sh -c 'echo gate-check' --approve",
        ] {
            assert!(!approves(command), "{command}");
        }
        // Too deep to follow.
        let mut nested = "gate-check --approve".to_string();
        for _ in 0..=MAX_DEPTH + 1 {
            nested = format!("sh -c {}", crate::shell_words::quote(&nested));
        }
        assert!(!approves(&nested));
    }

    #[test]
    fn plain_rewrites_name_their_files() {
        let words = |command: &str| written(command).into_iter().map(|(word, _)| word).collect::<Vec<_>>();
        assert_eq!(written("echo x > GATES.md"), [("GATES.md".to_string(), Writer::Redirection)]);
        assert_eq!(words("echo x >>gates/a.md 2>&1"), ["gates/a.md"]);
        assert_eq!(words("make &> log.txt; cat x >| out"), ["log.txt", "out"]);
        assert_eq!(words("echo x 2>&- 1>&2"), Vec::<String>::new());
        assert_eq!(
            written("printf x | tee -a GATES.md other.md"),
            [("GATES.md".to_string(), Writer::Tee), ("other.md".to_string(), Writer::Tee)]
        );
        assert_eq!(words("sed -i 's/- \\[ \\]/- [x]/' GATES.md"), ["s/- \\[ \\]/- [x]/", "GATES.md"]);
        assert_eq!(words("sed -ni.bak p GATES.md"), ["p", "GATES.md"]);
        assert_eq!(words("sed --in-place=.b -e x GATES.md"), ["x", "GATES.md"]);
        assert_eq!(words("sed -n p GATES.md"), Vec::<String>::new());
        assert_eq!(words("perl -pi -e 's/x/y/' GATES.md"), ["s/x/y/", "GATES.md"]);
        assert_eq!(words("perl -0pi.bak -e 1 GATES.md"), ["1", "GATES.md"]);
        assert_eq!(words("perl -Mstrict -e 1 GATES.md"), Vec::<String>::new());
        assert_eq!(words("bash -c 'echo x > GATES.md'"), ["GATES.md"]);
        assert_eq!(words("cat GATES.md < in.txt"), Vec::<String>::new());
        assert_eq!(Writer::Perl.describe(), "perl -i");
    }
}
