//! Which environment variables a confined check (`--sandbox`) does not
//! inherit: the names credentials go by. Pure: names in, names out. The
//! list is SECURITY.md's; a name is compared in upper case, so
//! `github_token` is removed like `GITHUB_TOKEN`.

use std::ffi::{OsStr, OsString};

/// Whole names that carry a credential or reach a credential holder.
const NAMES: [&str; 6] = ["GITHUB_TOKEN", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "TOKEN", "PASSWORD", "API_KEY"];
/// Prefixes of whole families: cloud and model-provider keys, and GitHub
/// Actions' OIDC token request (which mints tokens on demand).
const PREFIXES: [&str; 4] = ["AWS_", "ANTHROPIC_", "OPENAI_", "ACTIONS_ID_TOKEN_REQUEST_"];
const SUFFIXES: [&str; 4] = ["_TOKEN", "_API_KEY", "_APIKEY", "_AUTH"];
const PARTS: [&str; 6] = ["SECRET", "PASSWORD", "PASSWD", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"];

/// True when a variable of this name is withheld from a confined check.
pub fn is_credential(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    NAMES.contains(&name.as_str())
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
        || PARTS.iter().any(|part| name.contains(part))
}

/// The variables a confined check inherits, and the names withheld (in
/// the environment's order). A name in `keep` (`--sandbox-keep-env`) is
/// inherited even when it looks like a credential.
pub fn withhold(variables: &[(OsString, OsString)], keep: &[String]) -> (Vec<(OsString, OsString)>, Vec<String>) {
    let mut inherited = Vec::with_capacity(variables.len());
    let mut withheld = Vec::new();
    for (name, value) in variables {
        let text = name.to_string_lossy();
        let kept = keep.iter().any(|wanted| OsStr::new(wanted) == name);
        if is_credential(&text) && !kept {
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
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in
            ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "CI", "GITHUB_WORKSPACE", "TOKENIZERS_PARALLELISM"]
        {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn withholding_keeps_order_and_what_was_asked_for() {
        let variables: Vec<(OsString, OsString)> = [("PATH", "/bin"), ("GITHUB_TOKEN", "t"), ("AWS_REGION", "x")]
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect();
        let (inherited, withheld) = withhold(&variables, &["AWS_REGION".to_string()]);
        assert_eq!(withheld, ["GITHUB_TOKEN"]);
        let names: Vec<&OsString> = inherited.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["PATH", "AWS_REGION"]);
    }
}
