//! Shell completion through each shell's own machinery: the script
//! `gate-check completions SHELL` prints is loaded by bash, fish and zsh,
//! and their completion functions call the binary back, which offers
//! options after subcommands and the project's scope ids, gate ids and
//! leaf names.

#[cfg(unix)]
use std::path::PathBuf;
#[cfg(unix)]
use std::process::Command;

use crate::common::{gate, Sandbox};
#[cfg(unix)]
use crate::common::{installed, program};

/// A repository with two pipelines, root gates and a leaf.
fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "true", "x"));
    sandbox.write(".unlazy/api/GATES.md", &gate("A1", "true", "x"));
    sandbox.write(".unlazy/web/gates/leaf-9.md", &gate("W1", "true", "x"));
    sandbox
}

/// PATH with the binary under test first: the scripts call `gate-check`.
#[cfg(unix)]
fn path_with_binary() -> String {
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let directory: PathBuf = binary.parent().unwrap().to_path_buf();
    format!("{}:/usr/local/bin:/usr/bin:/bin", directory.display())
}

#[cfg(unix)]
/// `script` run by the shell `name`, or `None` when the machine has no
/// such shell (see `common::program`).
fn shell(sandbox: &Sandbox, name: &str, script: &str) -> Option<String> {
    let program = program(name)?;
    let output = Command::new(&program)
        .args(["-c", script])
        .current_dir(&sandbox.root)
        .env_clear()
        .env("PATH", path_with_binary())
        .env("HOME", sandbox.path("home"))
        .output()
        .unwrap_or_else(|error| panic!("cannot start {} ({error})", program.display()));
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{name} failed: {out}\n{err}");
    Some(out.into_owned())
}

/// Bash: loads the script, finds the function `complete -p` names, and
/// calls it as bash's programmable completion does, with COMP_* set.
#[cfg(unix)]
fn bash_completions(sandbox: &Sandbox, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let script = format!(
        "source <(gate-check completions bash)\n\
         fn=$(complete -p gate-check | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n\
         COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9\n\
         \"$fn\" gate-check \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = quoted.join(" ")
    );
    let out = shell(sandbox, "bash", &script).expect("bash drives these tests on every machine");
    out.lines().map(str::to_string).filter(|line| !line.is_empty()).collect()
}

// Drives bash, fish and zsh; PowerShell's registration and callback are
// tested in cli.
#[cfg(unix)]
#[test]
fn bash_completes_options_after_a_subcommand_and_the_projects_own_names() {
    let sandbox = project();
    assert_eq!(bash_completions(&sandbox, &["gate-check", "lint", "--st"]), ["--strict"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "install-hooks", "--ag"]), ["--agent"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "--scope", ""]), ["api", "web"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "lint", "--scope", "w"]), ["web"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "--gate", "leaf"]), ["leaf-9:W1"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "--gate", "G"]), ["G1", "GATES:A1", "GATES:G1"]);
    assert_eq!(bash_completions(&sandbox, &["gate-check", "--leaf", "le"]), ["leaf-9"]);
    assert!(bash_completions(&sandbox, &["gate-check", "--rev"]).contains(&"--reverify".to_string()));
}

// Drives bash, fish and zsh; PowerShell's registration and callback are
// tested in cli.
#[cfg(unix)]
#[test]
fn fish_completes_through_its_own_complete_command() {
    let sandbox = project();
    let script = "gate-check completions fish | source\n\
                  complete --do-complete 'gate-check lint --st'\n\
                  echo ---\n\
                  complete --do-complete 'gate-check --scope '";
    let Some(out) = shell(&sandbox, "fish", script) else { return };
    let (options, scopes) = out.split_once("---\n").unwrap();
    assert!(options.starts_with("--strict\t"), "{out}");
    assert_eq!(scopes, "api\nweb\n");
}

// Drives bash, fish and zsh; PowerShell's registration and callback are
// tested in cli.
#[cfg(unix)]
#[test]
fn zsh_registers_the_completer_and_the_callback_it_makes_answers() {
    let sandbox = project();
    let script = "autoload -U compinit; compinit -u -d \"$HOME/.zcompdump\"\n\
                  source <(gate-check completions zsh)\n\
                  print -r -- ${_comps[gate-check]}";
    let Some(registered) = shell(&sandbox, "zsh", script) else { return };
    assert_eq!(registered, "_clap_dynamic_completer_gate_check\n");
    // The call the zsh function makes on TAB, word for word.
    let answer = sandbox.run_with(
        sandbox.cmd().env("GATE_CHECK_COMPLETE", "zsh").env("_CLAP_COMPLETE_INDEX", "2").env("_CLAP_IFS", "\n").args([
            "--",
            "gate-check",
            "lint",
            "--st",
        ]),
    );
    answer.code(0).stdout_starts_with("--strict:");
}

#[test]
fn a_complete_variable_of_another_program_changes_nothing() {
    let sandbox = project();
    // The positive: the tool's own variable answers completions.
    sandbox
        .run_with(sandbox.cmd().env("GATE_CHECK_COMPLETE", "bash").env("_CLAP_COMPLETE_INDEX", "2").args([
            "--",
            "gate-check",
            "lint",
            "--st",
        ]))
        .code(0)
        .stdout_is("--strict");
    sandbox
        .run_with(sandbox.cmd().env("COMPLETE", "bash").args(["--status", "-q", "GATES.md"]))
        .code(1)
        .stdout_contains("UNMET: 1");
}

/// The candidates the binary answers for `words` (the last one being
/// completed), as bash's completion function asks on TAB.
fn candidates(sandbox: &Sandbox, words: &[&str]) -> String {
    let index = (words.len() - 1).to_string();
    let mut command = sandbox.cmd();
    command.env("GATE_CHECK_COMPLETE", "bash").env("_CLAP_COMPLETE_INDEX", index).env("_CLAP_IFS", "\n");
    sandbox.run_with(command.arg("--").args(words)).code(0).stderr_is("").into_stdout()
}

// Names a ledger file with control characters (or `:`), which Windows file
// systems refuse.
#[cfg(unix)]
#[test]
fn candidates_never_carry_control_characters_or_leave_the_repository() {
    let sandbox = project();
    // A leaf and a ledger whose names would move the cursor and set the title.
    sandbox.write(".unlazy/web/gates/leaf-\u{1b}]0;pwned\u{7}.md", "- [ ] E1: escape\n");
    sandbox.write("gates/g\u{1b}[2J.md", "- [ ] E2: escape\n");
    // The positive case: the clean names are offered.
    assert_eq!(candidates(&sandbox, &["gate-check", "--leaf", "le"]), "leaf-9");
    let gates = candidates(&sandbox, &["gate-check", "--gate", ""]);
    assert!(gates.contains("leaf-9:W1") && gates.contains("\nE2\n"), "{gates:?}");
    assert!(!gates.contains('\u{1b}') && !gates.contains('\u{7}'), "{gates:?}");

    // A `gates/` that is a link out of the repository is not listed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret-leaf.md"), "- [ ] S1: secret\n").unwrap();
    std::fs::create_dir_all(sandbox.path(".unlazy/ops")).unwrap();
    if crate::common::symlink(outside.path(), &sandbox.path(".unlazy/ops/gates")) {
        assert_eq!(candidates(&sandbox, &["gate-check", "--leaf", ""]), "leaf-9");
        assert!(!candidates(&sandbox, &["gate-check", "--gate", ""]).contains("S1"));
    }
}

#[cfg_attr(
    windows,
    ignore = "one TAB looks for 250 ms, which a start of the binary under wine can use up before it has read a ledger"
)]
#[test]
fn one_tab_reads_at_most_its_byte_budget_and_offers_what_it_found() {
    let sandbox = project();
    // 2 MiB plus one gate: more than one TAB may read.
    let mut big = String::from("- [ ] BIG1: too large to read on a TAB\n");
    while big.len() <= 2 * 1024 * 1024 {
        big.push_str("prose that fills the ledger to its size\n");
    }
    sandbox.write("gates/big.md", &big);
    sandbox.write("gates/small.md", "- [ ] SMALL1: read\n");
    let gates = candidates(&sandbox, &["gate-check", "--gate", ""]);
    assert!(gates.contains("\nSMALL1\n") && gates.contains("\nG1\n") && gates.contains("\nW1"), "{gates:?}");
    assert!(!gates.contains("BIG1"), "{gates:?}");
}

// Drives zsh, and this test binary under another PATH.
#[cfg(unix)]
#[test]
fn a_shell_the_machine_lacks_skips_its_test_with_a_notice_unless_ci_requires_it() {
    // This test binary runs one of its own tests, the zsh one, with a PATH
    // that holds zsh or one that does not, and with CI=true or not.
    let zsh_test = "completion::zsh_registers_the_completer_and_the_callback_it_makes_answers";
    let run = |path: &std::ffi::OsStr, ci: bool| {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.args([zsh_test, "--exact", "--test-threads=1"]).env("PATH", path).env_remove("CI");
        if ci {
            command.env("CI", "true");
        }
        let output = command.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text)
    };
    let skipped = format!("note: test {zsh_test} skipped: zsh is not installed (CI=true requires it)");
    // Where the machine has zsh, the test runs it, CI or not.
    let own_path = std::env::var_os("PATH").unwrap_or_default();
    if installed("zsh").is_some() {
        for ci in [false, true] {
            let (passed, text) = run(&own_path, ci);
            assert!(passed && text.contains("1 passed") && !text.contains(&skipped), "{text}");
        }
    }
    // Without it, the test is skipped with a notice, and fails under CI=true.
    let empty = tempfile::tempdir().unwrap();
    let (passed, text) = run(empty.path().as_os_str(), false);
    assert!(passed && text.contains(&skipped), "{text}");
    let (passed, text) = run(empty.path().as_os_str(), true);
    assert!(!passed && text.contains("zsh is needed for this test and CI=true requires it"), "{text}");
}

/// An interactive bash on a pseudo-terminal (util-linux `script`) with the
/// registration loaded: each line of `typed` is typed as is, TAB included,
/// so bash's readline splits the words and calls the completion function
/// itself. Each time that function answers, the answers are recorded; each
/// typed line is then echoed back as the line ended up (Ctrl-A, `echo LINE: `).
/// Returns (the answers of each TAB, the final lines).
#[cfg(unix)]
fn interactive_bash(sandbox: &Sandbox, typed: &[&str]) -> (Vec<String>, Vec<String>) {
    let replies = sandbox.path("home/replies");
    std::fs::create_dir_all(sandbox.path("home")).unwrap();
    let mut input = String::from(
        "source <(gate-check completions bash)\n\
         eval \"$(declare -f _gate_check_complete | sed '1s/_gate_check_complete/_registered/')\"\n\
         _gate_check_complete() { _registered \"$@\"; local IFS=' '; echo \"${COMPREPLY[*]}\" >> \"$HOME/replies\"; }\n",
    );
    for line in typed {
        input.push_str(&format!("{line}\x01echo LINE: \n"));
    }
    input.push_str("exit\n");
    let mut child = Command::new("script")
        .args(["-qec", "bash --norc --noprofile -i", "/dev/null"])
        .current_dir(&sandbox.root)
        .env_clear()
        .env("PATH", path_with_binary())
        .env("HOME", sandbox.path("home"))
        .env("TERM", "dumb")
        .env("PS1", "$ ")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` is needed to drive an interactive bash");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    let lines = shown.lines().filter_map(|line| line.strip_prefix("LINE: ")).map(str::to_string).collect();
    let answers = std::fs::read_to_string(replies).unwrap_or_default().lines().map(str::to_string).collect();
    (answers, lines)
}

// Drives a terminal through script(1) (util-linux).
#[cfg(unix)]
#[test]
fn bash_completes_a_gate_id_after_the_colon_bash_splits_words_at() {
    let sandbox = project();
    sandbox.write(".unlazy/web/gates/leaf-1.1.md", &format!("{}{}", gate("G1", "true", "x"), gate("G2", "true", "x")));
    let (answers, lines) = interactive_bash(
        &sandbox,
        &[
            // The positive: a word without a colon completes as it always did.
            "gate-check --gate leaf-1.\t",
            "gate-check --gate leaf-1.1:G\t",
            "gate-check --gate leaf-1.1:\t",
            "gate-check --gate leaf-1.1:G2\t",
            "gate-check --gate=leaf-1.1:G1\t",
            "gate-check --status --gate 'leaf-1.1:G2\t",
        ],
    );
    assert_eq!(
        answers,
        [
            "leaf-1.1:G1 leaf-1.1:G2",
            // What bash replaces is the part after the colon, so that part is offered.
            "G1 G2",
            "G1 G2",
            "G2",
            "G1",
            "leaf-1.1:G2",
        ]
    );
    assert_eq!(
        lines,
        [
            "gate-check --gate leaf-1.1:G",
            "gate-check --gate leaf-1.1:G",
            "gate-check --gate leaf-1.1:G",
            "gate-check --gate leaf-1.1:G2",
            "gate-check --gate=leaf-1.1:G1",
            "gate-check --status --gate leaf-1.1:G2",
        ]
    );
}
