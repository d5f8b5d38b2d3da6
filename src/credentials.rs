//! Which environment variables a confined check (`--sandbox`) does not
//! inherit: the names credentials go by, and any value that is a URL with
//! a password in it. Pure: variables in, variables out. The list is
//! SECURITY.md's; a name is compared in upper case, so `github_token` is
//! removed like `GITHUB_TOKEN`.

use std::ffi::{OsStr, OsString};

/// Whole names that carry a credential or reach a credential holder.
const NAMES: [&str; 6] = ["GITHUB_TOKEN", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "TOKEN", "PASSWORD", "API_KEY"];
/// Prefixes of whole families: cloud and model-provider keys, and GitHub
/// Actions' OIDC token request (which mints tokens on demand).
const PREFIXES: [&str; 4] = ["AWS_", "ANTHROPIC_", "OPENAI_", "ACTIONS_ID_TOKEN_REQUEST_"];
const SUFFIXES: [&str; 3] = ["_TOKEN", "_API_KEY", "_APIKEY"];
/// Anywhere in the name.
const PARTS: [&str; 8] = ["SECRET", "PASSWORD", "PASSWD", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL", "JWT", "OIDC"];
/// Whole `_`-separated words of the name: `GH_PAT`, `MYSQL_PWD`,
/// `TF_TOKEN_app_terraform_io`, `DOCKER_AUTH_CONFIG`.
const WORDS: [&str; 4] = ["PAT", "PWD", "TOKEN", "AUTH"];
/// The shell's working directories, which only look like `*_PWD`.
const WORKING_DIRECTORIES: [&str; 2] = ["PWD", "OLDPWD"];
/// Words that start like `AUTH...` (`NGROK_AUTHTOKEN`,
/// `HTTP_AUTHORIZATION`) but name a person: `GIT_AUTHOR_NAME`,
/// `CARGO_PKG_AUTHORS`.
const AUTHORS: [&str; 2] = ["AUTHOR", "AUTHORS"];

/// True when a variable of this name is withheld from a confined check.
pub fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    if WORKING_DIRECTORIES.contains(&name.as_str()) {
        return false;
    }
    let word = |word: &str| {
        WORDS.contains(&word) || word.ends_with("TOKEN") || (word.starts_with("AUTH") && !AUTHORS.contains(&word))
    };
    NAMES.contains(&name.as_str())
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
        || PARTS.iter().any(|part| name.contains(part))
        || name.split('_').any(word)
}

/// True when `value` holds a URL with a password in its user information
/// (`postgres://app:s3cret@db/app`), whatever the variable is called.
pub fn has_url_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let scheme = value[..at].rsplit(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))).next();
        let authority = value[at + 3..].split(['/', '?', '#']).next().unwrap_or_default();
        let password = authority
            .rsplit_once('@')
            .and_then(|(user_information, _)| user_information.split_once(':'))
            .map(|(_, password)| password);
        scheme.is_some_and(|scheme| !scheme.is_empty()) && password.is_some_and(|password| !password.is_empty())
    })
}

/// The variables a confined check inherits, and the names withheld (in
/// the environment's order). A name in `keep` (`--sandbox-keep-env`) is
/// inherited even when it or its value looks like a credential.
pub fn withhold(variables: &[(OsString, OsString)], keep: &[String]) -> (Vec<(OsString, OsString)>, Vec<String>) {
    let mut inherited = Vec::with_capacity(variables.len());
    let mut withheld = Vec::new();
    for (name, value) in variables {
        let text = name.to_string_lossy();
        let kept = keep.iter().any(|wanted| OsStr::new(wanted) == name);
        let credential = is_credential_name(&text) || has_url_password(&value.to_string_lossy());
        if credential && !kept {
            withheld.push(text.into_owned());
        } else {
            inherited.push((name.clone(), value.clone()));
        }
    }
    (inherited, withheld)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognised_by_their_names() {
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "NPM_TOKEN",
            "github_token",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_ORG_ID",
            "GEMINI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
            "AZURE_CLIENT_SECRET",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PWD_PASSWD",
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "DEPLOY_PRIVATE_KEY",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "ACTIONS_RUNTIME_TOKEN",
            "NPM_CONFIG__AUTH",
            "STRIPE_APIKEY",
            // Issue 34: names the first rules missed.
            "GITHUB_PAT",
            "GH_PAT",
            "MYSQL_PWD",
            "NGROK_AUTHTOKEN",
            "TF_TOKEN_app_terraform_io",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "CIRCLE_OIDC_TOKEN_V2",
            "DOCKER_AUTH_CONFIG",
            "HTTP_AUTHORIZATION",
            "VAULT_TOKEN_FILE",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "PATH",
            "PWD",
            "OLDPWD",
            "HOME",
            "LANG",
            "LC_ALL",
            "TERM",
            "USER",
            "CI",
            "GITHUB_WORKSPACE",
            "TOKENIZERS_PARALLELISM",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "CARGO_PKG_AUTHORS",
            "PYTHONPATH",
            "MANPATH",
            "PATHEXT",
            "XDG_RUNTIME_DIR",
            "DATABASE_URL",
            "COMPAT_MODE",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn a_url_with_a_password_is_a_credential_whatever_its_name() {
        for value in [
            "postgres://app:s3cret@db.internal:5432/app",
            "mysql://root:pw@127.0.0.1/test",
            "redis://:hunter2@cache:6379/0",
            "http://user:pass@proxy:3128",
            "mirror=https://ci:t0ken@git.example.com/repo.git",
        ] {
            assert!(has_url_password(value), "{value}");
        }
        for value in [
            "postgres://app@db/app",
            "postgres://localhost/app",
            "http://proxy:3128",
            "https://example.com/a:b@c",
            "https://user:@host/",
            "://x:y@z",
            "/usr/bin:/bin",
            "user:pass@host",
        ] {
            assert!(!has_url_password(value), "{value}");
        }
    }

    #[test]
    fn withholding_keeps_order_and_what_was_asked_for() {
        let variables: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "t"),
            ("AWS_REGION", "x"),
            ("DATABASE_URL", "postgres://app:pw@db/app"),
            ("PWD", "/repo"),
        ]
        .iter()
        .map(|(name, value)| (OsString::from(name), OsString::from(value)))
        .collect();
        let (inherited, withheld) = withhold(&variables, &["AWS_REGION".to_string()]);
        assert_eq!(withheld, ["GITHUB_TOKEN", "DATABASE_URL"]);
        let names: Vec<&OsString> = inherited.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["PATH", "AWS_REGION", "PWD"]);
    }
}
