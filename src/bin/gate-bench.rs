//! Benchmarks of the real `gate-check` binary, one subcommand each:
//!
//!     cargo run --release --bin gate-bench -- jobs
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

/// The release `gate-check` next to this benchmark, rebuilt so the figures
/// describe the current source.
fn release_binary() -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--bin", "gate-check", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .status()
        .context("running cargo build --release --bin gate-check")?;
    ensure!(status.success(), "cargo build --release --bin gate-check failed");
    let me = std::env::current_exe()?;
    let binary = me.with_file_name("gate-check");
    if !binary.is_file() {
        bail!("no gate-check binary beside {}; pass --binary PATH", me.display());
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

fn main() -> Result<()> {
    let cli = Cli::parse();
    let binary = match cli.binary {
        Some(binary) => fs::canonicalize(&binary).with_context(|| format!("--binary {}", binary.display()))?,
        None => release_binary()?,
    };
    let workspace = Workspace::new(binary)?;
    match cli.benchmark {
        Benchmark::Jobs { checks, sleep, jobs } => bench_jobs(&workspace, checks, &sleep, jobs),
    }
}
