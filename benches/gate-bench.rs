//! Benchmarks of the real `gate-check` binary, one subcommand each:
//!
//!     cargo bench --bench gate-bench -- all
//!     cargo bench --bench gate-bench -- status | overhead | jobs | flood
//!
//! Every benchmark works in a fresh temporary repository with its own
//! private approval store and prints the figures it measured. New
//! benchmarks are new `Benchmark` variants.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "gate-bench", about = "Benchmarks of the gate-check binary")]
struct Cli {
    /// The gate-check binary to measure (default: the release build, rebuilt first)
    #[arg(long, global = true, value_name = "PATH")]
    binary: Option<PathBuf>,
    #[command(subcommand)]
    benchmark: Benchmark,
}

#[derive(Debug, Subcommand)]
enum Benchmark {
    /// Every benchmark below with its default settings
    All,
    /// `--status` on a 10,000-gate ledger and on a 500-leaf scope: time and
    /// peak RSS, and the same work in Node.js when `node` is on PATH
    Status {
        /// Timed repetitions; the median is reported
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Per-check cost of 200 `true` checks against a loop spawning `sh -c true`
    Overhead {
        #[arg(long, default_value_t = 200)]
        checks: usize,
    },
    /// A check that prints 1 GiB: time until it fails and gate-check's peak RSS
    Flood,
    /// Wall time of independent sleeping checks with --jobs N against --jobs 1
    Jobs {
        /// Number of gates in the ledger
        #[arg(long, default_value_t = 16)]
        checks: usize,
        /// Seconds each check sleeps
        #[arg(long, default_value = "0.2")]
        sleep: String,
        /// The concurrent run's --jobs value
        #[arg(long, default_value_t = 8)]
        jobs: usize,
    },
}

/// Wall time, peak resident set and output of one finished process.
struct Measured {
    elapsed: Duration,
    peak_rss_kib: u64,
    success: bool,
    stdout: String,
}

/// Runs `command` to completion and measures it. The peak RSS comes from
/// `wait4`, which reports the child's own high-water mark.
fn measure(command: &mut Command) -> Result<Measured> {
    use std::io::Read;
    let started = Instant::now();
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("spawning the measured command")?;
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut stdout)?;
    }
    let pid = i32::try_from(child.id())?;
    let mut status = 0;
    // SAFETY: `rusage` is plain old data that wait4 fills in; the pid is our
    // own unreaped child, and std never waits for it after this.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
    ensure!(reaped == pid, "wait4 failed: {}", std::io::Error::last_os_error());
    let elapsed = started.elapsed();
    let success = nix::libc::WIFEXITED(status) && nix::libc::WEXITSTATUS(status) == 0;
    Ok(Measured { elapsed, peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0), success, stdout })
}

/// The median of `runs` measurements of the command `make` builds.
fn median(runs: usize, mut make: impl FnMut() -> Command) -> Result<Measured> {
    let mut all = (0..runs.max(1)).map(|_| measure(&mut make())).collect::<Result<Vec<_>>>()?;
    all.sort_by_key(|m| m.elapsed);
    Ok(all.swap_remove(all.len() / 2))
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A temporary repository root with a private approval store beside it.
struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    approvals: PathBuf,
    binary: PathBuf,
}

impl Workspace {
    fn new(binary: PathBuf) -> Result<Workspace> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let base = fs::canonicalize(dir.path())?;
        let root = base.join("repo");
        let approvals = base.join("approvals");
        fs::create_dir(&root)?;
        fs::create_dir(&approvals)?;
        fs::set_permissions(&approvals, fs::Permissions::from_mode(0o700))?;
        Ok(Workspace { _dir: dir, root, approvals, binary })
    }

    /// gate-check with `args`, run in the workspace with its own store.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .current_dir(&self.root)
            .env("UNLAZY_APPROVAL_DIR", &self.approvals)
            .env_remove("UNLAZY_SCOPE")
            .env_remove("UNLAZY_SHELL");
        command
    }

    /// Runs gate-check with `args`; fails unless it prints `ALL MET` and exits 0.
    fn run_all_met(&self, args: &[&str]) -> Result<Duration> {
        let started = Instant::now();
        let output = Command::new(&self.binary)
            .args(args)
            .current_dir(&self.root)
            .env("UNLAZY_APPROVAL_DIR", &self.approvals)
            .env_remove("UNLAZY_SCOPE")
            .env_remove("UNLAZY_SHELL")
            .output()
            .with_context(|| format!("running {}", self.binary.display()))?;
        let elapsed = started.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success() && stdout.contains("ALL MET"),
            "gate-check {} did not report ALL MET:\n{stdout}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(elapsed)
    }
}

/// The `gate-check` that cargo built for this benchmark run (`cargo bench`
/// builds it with the optimized bench profile before running the harness).
fn release_binary() -> Result<PathBuf> {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_gate-check"));
    if !binary.is_file() {
        bail!("no gate-check binary at {}; pass --binary PATH", binary.display());
    }
    Ok(binary)
}

fn bench_jobs(workspace: &Workspace, checks: usize, sleep: &str, jobs: usize) -> Result<()> {
    ensure!(sleep.parse::<f64>().is_ok_and(|s| s >= 0.0), "--sleep needs a number of seconds, got {sleep:?}");
    let mut ledger = String::from("# Benchmark: independent sleeping checks\n\n");
    for index in 1..=checks {
        ledger.push_str(&format!(
            "- [ ] B{index}: check {index} sleeps and reports\n  CHECK: sleep {sleep}; echo slept-{index}\n  EXPECT: slept-{index}\n  EVIDENCE: pending\n\n"
        ));
    }
    fs::write(workspace.root.join("GATES.md"), ledger)?;
    let jobs_text = jobs.to_string();
    // Approval binds the exact oracle (timeout included, --jobs not), so one
    // approving run covers both measured runs.
    workspace.run_all_met(&["--approve", "--jobs", &jobs_text])?;
    let sequential = workspace.run_all_met(&["--reverify", "--jobs", "1"])?;
    let concurrent = workspace.run_all_met(&["--reverify", "--jobs", &jobs_text])?;
    println!("jobs: {checks} checks of `sleep {sleep}` (--reverify), {}", workspace.binary.display());
    for (label, elapsed) in [("--jobs 1:".to_string(), sequential), (format!("--jobs {jobs}:"), concurrent)] {
        println!("  {label:<11}{:>8.3} s", elapsed.as_secs_f64());
    }
    println!("  ratio (jobs 1 / jobs {jobs}): {:.2}x", sequential.as_secs_f64() / concurrent.as_secs_f64());
    Ok(())
}

/// One runnable gate whose evidence is current, so `--status` must do the
/// full digest validation for it.
fn met_gate(id: &str) -> String {
    use gate_check::evidence::{definition_digest, success_evidence, Fingerprint, Transcript};
    let check = format!("test -f src/{id}.rs && grep -c fn src/{id}.rs");
    let expect = "/^[1-9]/";
    let evidence = success_evidence(
        &definition_digest(&check, expect, None),
        &Fingerprint::of("3\n"),
        &Transcript { shell: "/bin/sh", cwd: "/repo", path: "0123456789ab/9 entries" },
    );
    format!("- [x] {id}: {id} keeps its functions\n  CHECK: {check}\n  EXPECT: {expect}\n  EVIDENCE: {evidence}\n\n")
}

fn bench_status(workspace: &Workspace, runs: usize) -> Result<()> {
    let mut ledger = String::from("# Benchmark: a large ledger\n\n");
    for index in 0..10_000 {
        ledger.push_str(&met_gate(&format!("G{index}")));
    }
    fs::write(workspace.root.join("GATES.md"), &ledger)?;
    let gates = workspace.root.join(".unlazy/bench/gates");
    fs::create_dir_all(&gates)?;
    fs::write(workspace.root.join(".unlazy/bench/GATES.md"), met_gate("ROOT"))?;
    for leaf in 0..500 {
        let text: String = (0..10).map(|g| met_gate(&format!("L{leaf}G{g}"))).collect();
        fs::write(gates.join(format!("leaf-{leaf}.md")), text)?;
    }
    let leaf_files: Vec<PathBuf> = std::iter::once(workspace.root.join(".unlazy/bench/GATES.md"))
        .chain((0..500).map(|leaf| gates.join(format!("leaf-{leaf}.md"))))
        .collect();

    println!("status: median of {runs} runs, {}", workspace.binary.display());
    let node = node_script();
    let cases: [(&str, Vec<&str>, Vec<PathBuf>); 2] = [
        ("10,000-gate ledger", vec!["--status", "GATES.md"], vec![workspace.root.join("GATES.md")]),
        ("500-leaf scope (5,001 gates)", vec!["--status", "--scope", "bench"], leaf_files),
    ];
    for (label, args, files) in cases {
        let ours = median(runs, || workspace.command(&args))?;
        ensure!(ours.success && ours.stdout.contains("ALL MET"), "gate-check --status failed: {}", ours.stdout);
        println!("  {label}: gate-check {:.1} ms, peak RSS {} KiB", millis(ours.elapsed), ours.peak_rss_kib);
        if let Some(script) = &node {
            let theirs = median(runs, || {
                let mut command = Command::new("node");
                command.arg(script).args(&files).current_dir(&workspace.root);
                command
            })?;
            ensure!(theirs.success && theirs.stdout.contains("ALL MET"), "node baseline failed: {}", theirs.stdout);
            println!(
                "  {label}: node     {:.1} ms, peak RSS {} KiB; node / gate-check = {:.1}x time, {:.1}x memory",
                millis(theirs.elapsed),
                theirs.peak_rss_kib,
                theirs.elapsed.as_secs_f64() / ours.elapsed.as_secs_f64(),
                theirs.peak_rss_kib as f64 / ours.peak_rss_kib.max(1) as f64
            );
        }
    }
    if node.is_none() {
        println!("  (node not found on PATH: no Node.js comparison)");
    }
    Ok(())
}

/// The Node.js baseline script, when `node` can run it.
fn node_script() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node-status.mjs");
    let works = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    (works && script.is_file()).then_some(script)
}

fn bench_overhead(workspace: &Workspace, checks: usize) -> Result<()> {
    let mut ledger = String::from("# Benchmark: trivial checks\n\n");
    for index in 0..checks {
        ledger.push_str(&format!("- [ ] T{index}: trivial check {index}\n  CHECK: true\n  EXPECT: //\n\n"));
    }
    fs::write(workspace.root.join("GATES.md"), ledger)?;
    workspace.run_all_met(&["--approve"])?;
    let checked = workspace.run_all_met(&["--reverify"])?;
    let started = Instant::now();
    for _ in 0..checks {
        let output = Command::new("/bin/sh").args(["-c", "true"]).output()?;
        ensure!(output.status.success(), "sh -c true failed");
    }
    let plain = started.elapsed();
    let per = |d: Duration| millis(d) / checks as f64;
    println!("overhead: {checks} `true` checks");
    println!("  gate-check --reverify: {:>8.1} ms ({:.3} ms per check)", millis(checked), per(checked));
    println!("  plain spawn loop:      {:>8.1} ms ({:.3} ms per spawn)", millis(plain), per(plain));
    println!(
        "  ratio (gate-check / plain loop): {:.2}x; added cost per check {:.3} ms",
        checked.as_secs_f64() / plain.as_secs_f64(),
        per(checked) - per(plain)
    );
    Ok(())
}

fn bench_flood(workspace: &Workspace) -> Result<()> {
    const LIMIT_KIB: u64 = 16 * 1024;
    fs::write(
        workspace.root.join("GATES.md"),
        "# Benchmark: a check that floods its output\n\n- [ ] FLOOD: prints a gibibyte\n  CHECK: head -c 1073741824 /dev/zero\n  EXPECT: never\n",
    )?;
    let approve = measure(&mut workspace.command(&["--approve"]))?;
    ensure!(!approve.success && approve.stdout.contains("output exceeded 1048576 bytes"), "{}", approve.stdout);
    let run = measure(&mut workspace.command(&[]))?;
    ensure!(run.stdout.contains("FAIL GATES:FLOOD"), "{}", run.stdout);
    println!("flood: a check printing 1 GiB");
    println!(
        "  failed after {:.1} ms, gate-check peak RSS {} KiB ({} the 16 MiB budget)",
        millis(run.elapsed),
        run.peak_rss_kib,
        if run.peak_rss_kib < LIMIT_KIB { "within" } else { "OVER" }
    );
    ensure!(run.peak_rss_kib < LIMIT_KIB, "peak RSS {} KiB exceeds 16 MiB", run.peak_rss_kib);
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let binary = match cli.binary {
        Some(binary) => fs::canonicalize(&binary).with_context(|| format!("--binary {}", binary.display()))?,
        None => release_binary()?,
    };
    let fresh = || Workspace::new(binary.clone());
    match cli.benchmark {
        Benchmark::All => {
            bench_status(&fresh()?, 5)?;
            bench_overhead(&fresh()?, 200)?;
            bench_jobs(&fresh()?, 16, "0.2", 8)?;
            bench_flood(&fresh()?)
        }
        Benchmark::Status { runs } => bench_status(&fresh()?, runs),
        Benchmark::Overhead { checks } => bench_overhead(&fresh()?, checks),
        Benchmark::Jobs { checks, sleep, jobs } => bench_jobs(&fresh()?, checks, &sleep, jobs),
        Benchmark::Flood => bench_flood(&fresh()?),
    }
}
