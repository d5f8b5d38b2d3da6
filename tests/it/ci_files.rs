//! The files that cannot run here (the GitHub workflows, the composite
//! action, the README's CI example) must at least parse, agree with each
//! other on release archive names, and call only gate-check options and
//! subcommands the binary has. The action's own scripts run for real
//! against a local stand-in for the release download.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;

use yaml_rust2::{Yaml, YamlLoader};

#[cfg(unix)]
use crate::common::outcome;
use crate::common::Sandbox;

const RELEASE_TARGETS: [&str; 5] = [
    "aarch64-apple-darwin",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-msvc",
    "x86_64-unknown-linux-musl",
];

fn source(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One YAML document that is a mapping, or a failure naming the file.
fn yaml(name: &str, text: &str) -> Yaml {
    let mut documents = YamlLoader::load_from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(documents.len(), 1, "{name}: one document");
    let document = documents.remove(0);
    assert!(document.as_hash().is_some(), "{name}: not a mapping");
    document
}

/// The fenced ```yaml and ```sh blocks of the README.
fn readme_blocks(language: &str) -> Vec<String> {
    let readme = source("README.md");
    let fence = format!("```{language}\n");
    readme.split(&fence).skip(1).map(|rest| rest.split("\n```").next().unwrap().to_string()).collect()
}

fn steps(document: &Yaml) -> Vec<&Yaml> {
    let mut found = Vec::new();
    if let Some(jobs) = document["jobs"].as_hash() {
        for job in jobs.values() {
            found.extend(job["steps"].as_vec().into_iter().flatten());
        }
    }
    found.extend(document["runs"]["steps"].as_vec().into_iter().flatten());
    // A README snippet may be a bare list of steps.
    found.extend(document.as_vec().into_iter().flatten());
    found
}

/// Every `gate-check ARGS` a shell script runs (not `gate-check-<suffix>` names).
fn invocations(script: &str, default_args: &str) -> Vec<Vec<String>> {
    let pattern = regex::Regex::new(r#"(?:^|[\s;&|(])gate-check(?:[ \t]+([^;&|<>\n]*))?(?:$|[;&|<>\n])"#).unwrap();
    let mut found = Vec::new();
    for line in script.lines() {
        let code = line.split(" # ").next().unwrap();
        if code.trim_start().starts_with('#') || code.contains("::error::") {
            continue;
        }
        for capture in pattern.captures_iter(code) {
            let words = capture.get(1).map_or("", |m| m.as_str());
            let mut args = Vec::new();
            for word in words.split_whitespace() {
                match word.trim_matches('"') {
                    "$GATE_CHECK_ARGS" => args.extend(default_args.split_whitespace().map(str::to_string)),
                    word if word.contains('$') => args.push("/tmp/a-path".to_string()),
                    word => args.push(word.to_string()),
                }
            }
            found.push(args);
        }
    }
    found
}

/// The gate-check command lines in a YAML file: its `run:` scripts, and
/// `with: args` of steps that use this repository's action.
fn yaml_invocations(document: &Yaml, action_default_args: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for step in steps(document) {
        if let Some(script) = step["run"].as_str() {
            found.extend(invocations(script, action_default_args));
        }
        if step["uses"].as_str().is_some_and(|uses| uses.starts_with("gate-check/gate-check@")) {
            let args = step["with"]["args"].as_str().unwrap_or(action_default_args);
            let mut line: Vec<String> = Vec::new();
            let mut words = args.split_whitespace().map(str::to_string).peekable();
            // The action puts a report's options after `baseline`.
            line.extend(words.next_if(|word| word == "baseline"));
            if step["with"]["junit"].as_str() != Some("") {
                line.extend(["--format".to_string(), "junit".to_string()]);
            }
            line.extend(words);
            found.push(line);
        }
    }
    found
}

#[test]
fn workflows_and_the_action_are_well_formed_and_agree_on_release_names() {
    let ci = yaml("ci.yml", &source(".github/workflows/ci.yml"));
    let oses: Vec<&str> =
        ci["jobs"]["test"]["strategy"]["matrix"]["os"].as_vec().unwrap().iter().filter_map(Yaml::as_str).collect();
    assert_eq!(oses, ["ubuntu-latest", "macos-latest"]);
    assert_eq!(ci["jobs"]["windows"]["runs-on"].as_str(), Some("windows-latest"));
    let windows_steps = ci["jobs"]["windows"]["steps"].as_vec().unwrap();
    assert!(windows_steps.iter().any(|s| s["run"].as_str() == Some("cargo test --workspace --locked")));
    assert!(ci["jobs"]["test"]["steps"].as_vec().unwrap().iter().any(|s| s["run"].as_str() == Some("bash .ci/run")));

    let release = yaml("release.yml", &source(".github/workflows/release.yml"));
    assert_eq!(release["on"]["push"]["tags"][0].as_str(), Some("v[0-9]*"));
    let built: BTreeSet<&str> = release["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|entry| entry["target"].as_str().unwrap())
        .collect();
    assert_eq!(built, RELEASE_TARGETS.into_iter().collect());
    let release_text = source(".github/workflows/release.yml");
    assert!(release_text.contains(r#"name="gate-check-${VERSION}-${{ matrix.target }}""#));
    assert!(release_text.contains(r#""$name.$archive.sha256""#) && release_text.contains("SHA256SUMS"));
    // Windows: a zip holding gate-check.exe, and PowerShell's completion in every archive.
    assert!(release_text.contains("*-windows-*) exe=.exe archive=zip ;;"));
    assert!(release_text.contains(r#"completions powershell > "dist/$name/completions/gate-check.ps1""#));

    let action = yaml("action.yml", &source("action.yml"));
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    for input in ["version", "args", "junit"] {
        assert!(!action["inputs"][input]["description"].is_badvalue(), "action input {input}");
    }
    let install = action["runs"]["steps"][0]["run"].as_str().unwrap();
    let installed: BTreeSet<&str> = regex::Regex::new(r"target=([a-z0-9_-]+) ;;")
        .unwrap()
        .captures_iter(install)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert_eq!(installed, RELEASE_TARGETS.into_iter().collect(), "action.yml installs what release.yml builds");
    assert!(
        install.contains(r#"name="gate-check-$version-$target""#) && install.contains("-c \"$name.$archive.sha256\"")
    );
    assert_eq!(action["runs"]["steps"][0]["env"]["GATE_CHECK_REPOSITORY"].as_str(), Some("gate-check/gate-check"));

    let manifest = source("Cargo.toml");
    for line in [
        r#"repository = "https://github.com/gate-check/gate-check""#,
        r#"pkg-url = "{ repo }/releases/download/v{ version }/{ name }-{ version }-{ target }.tar.gz""#,
        r#"bin-dir = "{ name }-{ version }-{ target }/{ bin }{ binary-ext }""#,
        r#"pkg-fmt = "tgz""#,
        "[package.metadata.binstall.overrides.x86_64-pc-windows-msvc]",
        r#"pkg-url = "{ repo }/releases/download/v{ version }/{ name }-{ version }-{ target }.zip""#,
        r#"pkg-fmt = "zip""#,
    ] {
        assert!(manifest.lines().any(|l| l == line), "Cargo.toml lacks {line}");
    }
}

#[test]
fn every_gate_check_command_line_in_ci_files_and_the_readme_exists_in_the_binary() {
    let action = yaml("action.yml", &source("action.yml"));
    let default_args = action["inputs"]["args"]["default"].as_str().unwrap().to_string();
    let mut lines = Vec::new();
    for file in [".github/workflows/ci.yml", ".github/workflows/release.yml", "action.yml"] {
        lines.extend(yaml_invocations(&yaml(file, &source(file)), &default_args));
    }
    let readme_yaml = readme_blocks("yaml");
    assert!(readme_yaml.iter().any(|block| block.contains("if: always()")), "README CI example");
    for (index, block) in readme_yaml.iter().enumerate() {
        let document = YamlLoader::load_from_str(block).unwrap_or_else(|e| panic!("README yaml block {index}: {e}"));
        for document in &document {
            lines.extend(yaml_invocations(document, &default_args));
        }
    }
    for block in readme_blocks("sh") {
        lines.extend(invocations(&block, &default_args));
    }
    let shown: BTreeSet<String> = lines.iter().map(|args| args.join(" ")).collect();
    for expected in [
        "--version",
        "man --dir /tmp/a-path",
        "completions bash",
        "completions zsh",
        "completions fish",
        "--format junit --status",
        "--status --format junit",
        "baseline --format junit origin/main",
    ] {
        assert!(shown.contains(expected), "{expected:?} not found among {shown:#?}");
    }

    let sandbox = Sandbox::new();
    // The probe itself can fail: an option the binary lacks is exit 2.
    sandbox
        .run(&["--no-such-option", "--help"])
        .code(2)
        .stderr_contains("error: unexpected argument '--no-such-option' found");
    for args in &lines {
        sandbox.run_with(sandbox.cmd().args(args).arg("--help")).code(0).stdout_contains("gate-check");
    }
}

/// A stand-in for `curl -fsSL[O] URL` that serves the release URLs from a
/// local directory, so the action's install script runs for real.
#[cfg(unix)]
fn fake_curl(bin: &Path, releases: &Path) {
    let script = format!(
        r#"#!/bin/sh
for url; do :; done
case "$url" in
  https://api.github.com/repos/gate-check/gate-check/releases/latest) printf '{{\n  "tag_name": "v0.1.0",\n  "name": "x"\n}}\n' ;;
  https://github.com/gate-check/gate-check/releases/download/*)
    file="{releases}/${{url#https://github.com/gate-check/gate-check/releases/download/}}"
    [ -f "$file" ] || exit 22
    cp "$file" "./${{url##*/}}" ;;
  *) exit 6 ;;
esac
"#,
        releases = releases.display()
    );
    fs::create_dir_all(bin).unwrap();
    fs::write(bin.join("curl"), script).unwrap();
    fs::set_permissions(bin.join("curl"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

#[cfg(unix)]
fn runner_target() -> (&'static str, &'static str, &'static str) {
    let os = if cfg!(target_os = "macos") { "macOS" } else { "Linux" };
    let arch = if cfg!(target_arch = "aarch64") { "ARM64" } else { "X64" };
    let target = match (os, arch) {
        ("macOS", "ARM64") => "aarch64-apple-darwin",
        ("macOS", _) => "x86_64-apple-darwin",
        (_, "ARM64") => "aarch64-unknown-linux-musl",
        _ => "x86_64-unknown-linux-musl",
    };
    (os, arch, target)
}

/// Runs one step of action.yml with bash, its `env` filled from `values`.
#[cfg(unix)]
fn action_step(step: &Yaml, cwd: &Path, values: &[(&str, String)], path: &str) -> std::process::Output {
    let mut command = std::process::Command::new("bash");
    command.arg("-c").arg(step["run"].as_str().unwrap()).current_dir(cwd).env("PATH", path);
    for (name, _) in step["env"].as_hash().unwrap() {
        let name = name.as_str().unwrap();
        let value = values.iter().find(|(key, _)| *key == name).map(|(_, v)| v.clone());
        let static_value = step["env"][name].as_str().filter(|v| !v.contains("${{")).map(str::to_string);
        command.env(name, value.or(static_value).unwrap_or_else(|| panic!("no test value for {name}")));
    }
    for (name, value) in values {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// A release v0.1.0 of the binary under test, packed and checksummed as
/// release.yml packs it, served by a stand-in curl: (work directory,
/// archive name, releases directory, PATH with the stand-in first).
#[cfg(unix)]
fn staged_release(sandbox: &Sandbox) -> (PathBuf, String, PathBuf, String) {
    let work = sandbox.root.parent().unwrap().join("action");
    let (_, _, target) = runner_target();
    let name = format!("gate-check-0.1.0-{target}");
    let releases = work.join("releases");
    let staged = releases.join("v0.1.0").join(&name);
    fs::create_dir_all(&staged).unwrap();
    fs::copy(assert_cmd::cargo::cargo_bin("gate-check"), staged.join("gate-check")).unwrap();
    let pack = format!(
        "cd '{dir}' && tar -czf {name}.tar.gz {name} && rm -r {name} && \
         (sha256sum {name}.tar.gz 2>/dev/null || shasum -a 256 {name}.tar.gz) > {name}.tar.gz.sha256",
        dir = releases.join("v0.1.0").display()
    );
    assert!(std::process::Command::new("sh").arg("-c").arg(&pack).status().unwrap().success(), "{pack}");
    fake_curl(&work.join("bin"), &releases);
    let path = format!("{}:{}", work.join("bin").display(), std::env::var("PATH").unwrap());
    (work, name, releases, path)
}

/// The environment the action's install step runs with: the runner's
/// variables for this machine, then the step's inputs (`version`, a pinned
/// `sha256`, and the ref the action was used at).
#[cfg(unix)]
fn install_step_env(
    temp: &Path,
    action_path: &Path,
    [version, pinned, action_ref]: [&str; 3],
) -> [(&'static str, String); 10] {
    let (os, arch, _) = runner_target();
    [
        ("RUNNER_OS", os.to_string()),
        ("RUNNER_ARCH", arch.to_string()),
        ("RUNNER_TEMP", temp.display().to_string()),
        ("GITHUB_PATH", temp.join("github_path").display().to_string()),
        ("GITHUB_OUTPUT", temp.join("github_output").display().to_string()),
        ("GATE_CHECK_VERSION", version.to_string()),
        ("GATE_CHECK_SHA256", pinned.to_string()),
        ("GATE_CHECK_ACTION_REF", action_ref.to_string()),
        ("GATE_CHECK_ACTION_PATH", action_path.display().to_string()),
        ("GH_TOKEN", "test-token".to_string()),
    ]
}

// Runs the action's bash steps with a stand-in curl, as on Linux and macOS
// runners.
#[cfg(unix)]
#[test]
fn the_action_installs_only_a_verified_archive_and_reports_in_junit() {
    let sandbox = Sandbox::new();
    let (work, name, releases, path) = staged_release(&sandbox);

    let action = yaml("action.yml", &source("action.yml"));
    let (install, run) = (&action["runs"]["steps"][0], &action["runs"]["steps"][1]);
    // The action's own checkout: its Cargo.toml and checksums.txt.
    let action_path = work.join("action-checkout");
    fs::create_dir_all(&action_path).unwrap();
    fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"), action_path.join("Cargo.toml")).unwrap();
    fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("checksums.txt"), action_path.join("checksums.txt")).unwrap();
    let install_as = |temp: &str, pinned: &str, version: &str, action_ref: &str| {
        let temp = work.join(temp);
        fs::create_dir_all(&temp).unwrap();
        let values = install_step_env(&temp, &action_path, [version, pinned, action_ref]);
        let output = action_step(install, &work, &values, &path);
        (output, temp)
    };
    let install_with = |temp: &str, pinned: &str| install_as(temp, pinned, "latest", "v9.9.9");

    let (output, temp) = install_with("ok", "");
    let (code, out, err) = outcome(&output);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("gate-check {}", env!("CARGO_PKG_VERSION"))), "{out}");
    let bin = temp.join(format!("gate-check-0.1.0/{name}/gate-check"));
    assert!(fs::read_to_string(temp.join("github_output")).unwrap().contains(&format!("bin={}\n", bin.display())));
    assert!(fs::read_to_string(temp.join("github_path")).unwrap().contains(&name));

    // The run step: a JUnit report and the exit code, for met and unmet ledgers.
    let run_with = |ledger: &str| {
        sandbox.write("GATES.md", ledger);
        let output_file = temp.join("run_output");
        let values = [
            ("GATE_CHECK_ARGS", action["inputs"]["args"]["default"].as_str().unwrap().to_string()),
            ("GATE_CHECK_JUNIT", "gate-report.xml".to_string()),
            ("GATE_CHECK_PARTITION", String::new()),
            ("GATE_CHECK_BIN", bin.display().to_string()),
            ("GITHUB_OUTPUT", output_file.display().to_string()),
            ("UNLAZY_APPROVAL_DIR", sandbox.approvals.display().to_string()),
        ];
        let output = action_step(run, &sandbox.root, &values, "/usr/bin:/bin");
        let recorded = fs::read_to_string(&output_file).unwrap();
        fs::remove_file(&output_file).unwrap();
        (output.status.code(), recorded, sandbox.read("gate-report.xml"))
    };
    let (code, recorded, report) = run_with("- [x] M: read by hand\n  EVIDENCE: read on Monday\n");
    assert_eq!((code, recorded.as_str()), (Some(0), "exit-code=0\n"));
    assert!(report.contains("<testsuites") && report.contains("failures=\"0\""), "{report}");
    let (code, recorded, report) = run_with("- [ ] M: not read yet\n");
    assert_eq!((code, recorded.as_str()), (Some(1), "exit-code=1\n"));
    assert!(report.contains("<failure"), "{report}");
    // `baseline` takes the report's options after its name: its own JUnit
    // report (here of an error: the sandbox is no git repository).
    let output_file = temp.join("run_output");
    let values = [
        ("GATE_CHECK_ARGS", "baseline HEAD".to_string()),
        ("GATE_CHECK_JUNIT", "baseline-report.xml".to_string()),
        ("GATE_CHECK_PARTITION", String::new()),
        ("GATE_CHECK_BIN", bin.display().to_string()),
        ("GITHUB_OUTPUT", output_file.display().to_string()),
        ("UNLAZY_APPROVAL_DIR", sandbox.approvals.display().to_string()),
    ];
    sandbox.write("GATES.md", "- [ ] A: built\n  CHECK: echo A\n  EXPECT: A\n");
    let output = action_step(run, &sandbox.root, &values, "/usr/bin:/bin");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(fs::read_to_string(&output_file).unwrap(), "exit-code=2\n");
    let report = sandbox.read("baseline-report.xml");
    assert!(
        report.contains("<testsuites name=\"gate-check baseline\" tests=\"0\" failures=\"0\" errors=\"1\""),
        "{report}"
    );
    assert!(report.contains("baseline needs a git repository"), "{report}");

    // A checksum that does not match stops the install before anything is unpacked.
    let (output, _) = install_with("pinned", &"0".repeat(64));
    assert_ne!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("not the pinned"), "{output:?}");
    let sums = releases.join(format!("v0.1.0/{name}.tar.gz.sha256"));
    let text = fs::read_to_string(&sums).unwrap();
    fs::write(&sums, format!("{}{}", "0".repeat(64), &text[64..])).unwrap();
    let (output, temp) = install_with("tampered", "");
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    assert!(!temp.join(format!("gate-check-0.1.0/{name}")).exists(), "unpacked an archive that failed its checksum");
    fs::write(&sums, text).unwrap();
}

// Runs the action's bash steps with a stand-in curl, as on Linux and macOS
// runners.
#[cfg(unix)]
#[test]
fn the_action_installs_its_own_version_checks_pinned_checksums_and_can_only_install() {
    let sandbox = Sandbox::new();
    let (work, name, releases, path) = staged_release(&sandbox);
    let real_sum = fs::read_to_string(releases.join(format!("v0.1.0/{name}.tar.gz.sha256"))).unwrap();
    let action = yaml("action.yml", &source("action.yml"));
    let install = &action["runs"]["steps"][0];
    let install_as = |case: &str, version: &str, action_ref: &str, checksums: &str| {
        let (temp, action_path) = (work.join(case), work.join(format!("{case}-checkout")));
        fs::create_dir_all(&temp).unwrap();
        fs::create_dir_all(&action_path).unwrap();
        fs::write(action_path.join("Cargo.toml"), "[package]\nname = \"gate-check\"\nversion = \"0.1.0\"\n").unwrap();
        fs::write(action_path.join("checksums.txt"), checksums).unwrap();
        let values = install_step_env(&temp, &action_path, [version, "", action_ref]);
        let output = action_step(install, &work, &values, &path);
        let (code, out, err) = outcome(&output);
        (code, format!("{out}{err}"), temp.join(format!("gate-check-0.1.0/{name}")).exists())
    };
    // No version input: the tag the action was used at, else its Cargo.toml's version.
    let (code, out, unpacked) = install_as("by-tag", "", "v0.1.0", "");
    assert!(code == 0 && unpacked, "{out}");
    assert!(out.contains("is not listed in this action's checksums.txt"), "{out}");
    let (code, out, unpacked) = install_as("by-manifest", "", "main", "");
    assert!(code == 0 && unpacked, "{out}");
    let (code, out, _) = install_as("unknown", "", "v9.9.9", "");
    assert_ne!(code, 0, "a tag with no release is not installed: {out}");
    // A checksum pinned in the action's repository must match.
    let (code, out, unpacked) = install_as("pinned-right", "", "v0.1.0", &format!("# pins\n{real_sum}"));
    assert!(code == 0 && unpacked && !out.contains("is not listed"), "{out}");
    let wrong = format!("{}  {name}.tar.gz\n", "f".repeat(64));
    let (code, out, unpacked) = install_as("pinned-wrong", "", "v0.1.0", &wrong);
    assert!(code != 0 && !unpacked, "{out}");
    assert!(out.contains("as checksums.txt of this action pins it"), "{out}");

    // Install only: the run step is skipped by its condition; a share is passed on.
    let run = &action["runs"]["steps"][1];
    assert_eq!(run["if"].as_str(), Some("inputs.run != 'false'"));
    assert_eq!(action["inputs"]["run"]["default"].as_str(), Some("true"));
    let bin = work.join(format!("by-tag/gate-check-0.1.0/{name}/gate-check"));
    sandbox.write("GATES.md", "- [x] A: one\n  EVIDENCE: seen\n- [ ] B: two\n");
    let share = |partition: &str| {
        let output_file = work.join("share_output");
        let values = [
            ("GATE_CHECK_ARGS", "--status".to_string()),
            ("GATE_CHECK_JUNIT", String::new()),
            ("GATE_CHECK_PARTITION", partition.to_string()),
            ("GATE_CHECK_BIN", bin.display().to_string()),
            ("GITHUB_OUTPUT", output_file.display().to_string()),
            ("UNLAZY_APPROVAL_DIR", sandbox.approvals.display().to_string()),
        ];
        let output = action_step(run, &sandbox.root, &values, "/usr/bin:/bin");
        outcome(&output)
    };
    let (code, out, _) = share("1/2");
    assert_eq!(code, 0, "share 1/2 holds only the met gate: {out}");
    assert!(out.contains("ALL MET (1 met, not selected: 1)"), "{out}");
    let (code, out, _) = share("2/2");
    assert_eq!(code, 1, "{out}");
    let (code, _, _) = share("");
    assert_eq!(code, 1);
}

// The install step as a Windows runner's bash runs it: a zip holding
// gate-check.exe, and paths handed on through cygpath. The stand-in cygpath
// marks each conversion it makes, so the test sees which form went where.
#[cfg(unix)]
#[test]
fn on_a_windows_runner_the_action_installs_the_zip_and_hands_on_windows_paths() {
    let sandbox = Sandbox::new();
    let (work, _, releases, path) = staged_release(&sandbox);
    let name = "gate-check-0.1.0-x86_64-pc-windows-msvc";
    let staged = releases.join("v0.1.0").join(name);
    fs::create_dir_all(&staged).unwrap();
    // The binary under test stands in for the .exe, so `--version` runs.
    fs::copy(assert_cmd::cargo::cargo_bin("gate-check"), staged.join("gate-check.exe")).unwrap();
    let pack = format!(
        "cd '{dir}' && python3 -m zipfile -c {name}.zip {name}/ && rm -r {name} && sha256sum {name}.zip > {name}.zip.sha256",
        dir = releases.join("v0.1.0").display()
    );
    assert!(std::process::Command::new("sh").arg("-c").arg(&pack).status().unwrap().success(), "{pack}");
    let cygpath = work.join("bin/cygpath");
    let stand_in = r#"#!/bin/sh
case "$1" in -u) printf '%s\n' "$2" ;; *) printf 'cygpath%s %s\n' "$1" "$2" ;; esac
"#;
    fs::write(&cygpath, stand_in).unwrap();
    fs::set_permissions(&cygpath, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let action = yaml("action.yml", &source("action.yml"));
    let temp = work.join("windows");
    fs::create_dir_all(&temp).unwrap();
    let mut values = install_step_env(&temp, &work.join("no-checkout"), ["0.1.0", "", "v0.1.0"]);
    values[0].1 = "Windows".to_string();
    values[1].1 = "X64".to_string();
    let output = action_step(&action["runs"]["steps"][0], &work, &values, &path);
    let (code, out, err) = outcome(&output);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("gate-check {}", env!("CARGO_PKG_VERSION"))), "{out}");
    let unpacked = temp.join("gate-check-0.1.0").join(name);
    assert_eq!(
        fs::read_to_string(temp.join("github_path")).unwrap(),
        format!("cygpath-w {}\n", unpacked.display()),
        "PATH is given as Windows spells it"
    );
    let outputs = fs::read_to_string(temp.join("github_output")).unwrap();
    assert_eq!(outputs, format!("bin=cygpath-m {}\n", unpacked.join("gate-check.exe").display()), "{outputs}");
}

// Runs the action's bash steps with a stand-in curl, as on Linux and macOS
// runners.
#[cfg(unix)]
#[test]
fn the_action_appends_the_checked_pipelines_tree_to_the_job_summary() {
    let sandbox = Sandbox::new();
    let action = yaml("action.yml", &source("action.yml"));
    let step = &action["runs"]["steps"][2];
    assert_eq!(step["id"].as_str(), Some("tree"));
    assert_eq!(step["if"].as_str(), Some("always() && inputs.run != 'false' && inputs.tree-summary != 'false'"));
    let summary = sandbox.root.parent().unwrap().join("step-summary.md");
    let run = |args: &str| {
        let _ = fs::remove_file(&summary);
        let values = [
            ("GATE_CHECK_ARGS", args.to_string()),
            ("GATE_CHECK_BIN", assert_cmd::cargo::cargo_bin("gate-check").display().to_string()),
            ("GITHUB_STEP_SUMMARY", summary.display().to_string()),
            ("UNLAZY_APPROVAL_DIR", sandbox.approvals.display().to_string()),
        ];
        let (code, out, err) = outcome(&action_step(step, &sandbox.root, &values, "/usr/bin:/bin"));
        assert_eq!(code, 0, "{out}{err}");
        fs::read_to_string(&summary).unwrap_or_default()
    };
    // No pipeline: the summary is left alone.
    sandbox.write("GATES.md", "- [ ] G1: x\n");
    assert_eq!(run("--status"), "");
    // The only pipeline, or the one --scope names: its tree.
    sandbox.write(".unlazy/api/PLAN.md", "## Tree\n\n- 1 API ...... GATES.md\n");
    sandbox.write(".unlazy/api/GATES.md", "- [x] A1: done\n  EVIDENCE: seen\n");
    let only = run("--status");
    assert!(only.starts_with("## gate-check tree: scope `api`\n\n**All met, no drift.**"), "{only}");
    sandbox.write(".unlazy/web/GATES.md", "- [ ] W1: x\n");
    assert_eq!(run("--status"), "", "two pipelines and no --scope: which one ran is unknown");
    let named = run("--status --scope web");
    assert!(named.starts_with("## gate-check tree: scope `web`\n\n**Not done.** No `PLAN.md`"), "{named}");
}

/// DEL (U+007F) is neither a C0 nor a C1 control, and gate-check refuses it
/// in definitions and replaces it in output like them: every document that
/// names the C0 or C1 controls names DEL beside them.
#[test]
fn the_documents_name_del_wherever_they_name_the_c0_and_c1_controls() {
    // What they describe: DEL in a title is printed as a space, and refused in a CHECK.
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: a\u{7f}b\n");
    sandbox.run(&["--status"]).code(1).stdout_contains("  UNMET GATES:G1 (unchecked): a b\n");
    sandbox.write("GATES.md", "- [ ] G1: a\n  CHECK: true\u{7f}\n  EXPECT: x\n");
    sandbox.run(&["--status"]).code(2).stderr_contains("\\x7F");

    let documents = ["README.md", "SECURITY.md", "CHANGELOG.md"].into_iter().map(String::from).chain(
        fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("references")).unwrap().filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.ends_with(".md").then(|| format!("references/{name}"))
        }),
    );
    for document in documents {
        let text = source(&document);
        for paragraph in
            text.split("\n\n").filter(|paragraph| paragraph.contains("C0") || paragraph.contains("C1 control"))
        {
            assert!(paragraph.contains("DEL"), "{document}: names C0/C1 controls without DEL:\n{paragraph}");
        }
    }
}
