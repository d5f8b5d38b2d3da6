//! A small POSIX-shell tokenizer, enough to read the first command of a
//! CHECK or a hook command line: quotes and backslashes are removed from
//! words, and runs of `;`, `&`, `|`, `<`, `>` (and single parentheses)
//! become operators. It never expands anything.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Word(String),
    Operator(String),
}

impl Token {
    pub fn is_word(&self, text: &str) -> bool {
        matches!(self, Token::Word(word) if word == text)
    }
}

pub fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut word: Option<String> = None;
    let flush = |word: &mut Option<String>, tokens: &mut Vec<Token>| {
        if let Some(done) = word.take() {
            tokens.push(Token::Word(done));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => flush(&mut word, &mut tokens),
            ';' | '&' | '|' | '(' | ')' | '<' | '>' => {
                flush(&mut word, &mut tokens);
                let mut op = c.to_string();
                if !"();".contains(c) {
                    while let Some(&next) = chars.peek() {
                        if !"&|<>".contains(next) {
                            break;
                        }
                        op.push(next);
                        chars.next();
                    }
                }
                tokens.push(Token::Operator(op));
            }
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                for inner in chars.by_ref() {
                    if inner == '\'' {
                        break;
                    }
                    current.push(inner);
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                while let Some(inner) = chars.next() {
                    match inner {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                current.push(escaped);
                            }
                        }
                        other => current.push(other),
                    }
                }
            }
            '\\' => {
                let current = word.get_or_insert_with(String::new);
                if let Some(escaped) = chars.next() {
                    current.push(escaped);
                }
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

/// `text` as one shell word: unchanged when it holds only characters no
/// shell treats specially, else single-quoted.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text)
            .into_iter()
            .map(|t| match t {
                Token::Word(w) => w,
                Token::Operator(o) => format!("<{o}>"),
            })
            .collect()
    }

    #[test]
    fn splits_words_quotes_and_operators() {
        assert_eq!(
            words("cd 'a b' && echo \"x\\\"y\" z\\ w;true|x"),
            ["cd", "a b", "<&&>", "echo", "x\"y", "z w", "<;>", "true", "<|>", "x"]
        );
        assert_eq!(words("a 2>&1 (b)"), ["a", "2", "<>&>", "1", "<(>", "b", "<)>"]);
    }

    #[test]
    fn quoting_round_trips() {
        for text in ["/usr/bin/gate-check", "/home/a b/it's/gate-check", ""] {
            assert_eq!(words(&quote(text)), if text.is_empty() { vec![String::new()] } else { vec![text.to_string()] });
        }
        assert_eq!(quote("/usr/bin/gate-check"), "/usr/bin/gate-check");
    }
}
