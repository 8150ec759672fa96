//! Copies of the running test binary as child processes: each runs one
//! `#[ignore]`d test (the child's part of a multi-process test) with the
//! environment the parent gives it, and the parent reads what each printed.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// Starts `n` copies of this test binary, each running the ignored test
/// `test` alone with `env` set, all at once; waits for every one and
/// returns each one's standard output. A child that fails fails the
/// parent, with what it printed.
pub fn run_copies(test: &str, n: usize, env: &[(&str, &str)]) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(&exe)
                .args([
                    test,
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .envs(env.iter().copied())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a child process")
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "a child process failed:\n{stdout}");
            stdout
        })
        .collect()
}
