//! Writers under which the database (or the server) fails: four threads PATCHing distinct
//! `user:` keys into one session until stopped, recording what was acknowledged and what was
//! refused. The outage tests and the failover drills share them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::outage::try_http;

/// What the writers saw.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Keys whose PATCH was answered 200.
    pub(crate) acked: Vec<String>,
    /// Answers other than 200: status, body, how long it took.
    pub(crate) refused: Vec<(u16, String, Duration)>,
    /// The longest any request took.
    pub(crate) slowest: Duration,
}

/// What a request that got no complete answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// A failure: the server must answer every request (a database failing over under it).
    Refused,
    /// Not acknowledged, nothing more: the test kills the server in the middle of requests.
    NotAcknowledged,
}

/// Four writers PATCHing `user:w<writer>-<n>` into session `s` of user `u` of `app`, spread over
/// `addrs`, until stopped.
pub(crate) struct Load {
    stop: Arc<AtomicBool>,
    report: Arc<Mutex<Report>>,
    writers: Vec<JoinHandle<()>>,
}

impl Load {
    pub(crate) fn start(addrs: &[String], app: &str, no_answer: NoAnswer) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let report = Arc::new(Mutex::new(Report::default()));
        let writers = (0..4)
            .map(|w| {
                let addr = addrs[w % addrs.len()].clone();
                let (app, stop, report) = (app.to_owned(), Arc::clone(&stop), Arc::clone(&report));
                std::thread::spawn(move || {
                    let path = format!("/apps/{app}/users/u/sessions/s");
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("user:w{w}-{n}");
                        let started = Instant::now();
                        let answer = try_http(&addr, "PATCH", &path, &format!(r#"{{"stateDelta": {{"{key}": {n}}}}}"#));
                        let took = started.elapsed();
                        let acked = matches!(answer, Some((200, _)));
                        let mut report = report.lock().unwrap();
                        report.slowest = report.slowest.max(took);
                        match answer {
                            Some((200, _)) => report.acked.push(key),
                            Some((status, body)) => report.refused.push((status, body, took)),
                            None if no_answer == NoAnswer::Refused => {
                                report.refused.push((0, "no answer".to_owned(), took));
                            }
                            None => {}
                        }
                        drop(report);
                        if !acked {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        Self { stop, report, writers }
    }

    /// How many writes have been acknowledged so far.
    pub(crate) fn acked(&self) -> usize {
        self.report.lock().unwrap().acked.len()
    }

    /// Waits until `more` writes beyond those acknowledged now are acknowledged.
    pub(crate) fn wait_for_more(&self, more: usize, limit: Duration) {
        let before = self.acked();
        crate::outage::wait_for("writes", limit, || self.acked() >= before + more);
    }

    /// Stops the writers: what they saw.
    pub(crate) fn stop(self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        for writer in self.writers {
            writer.join().unwrap();
        }
        std::mem::take(&mut *self.report.lock().unwrap())
    }

    /// [`stop`](Self::stop), where every refusal must be a 503, or a 409 saying the write lost
    /// its races with the other writers of the session (a blind write gives up after a bound
    /// number of them; under a cluster's commit latency it can), answered within `limit`.
    pub(crate) fn finish(self, limit: Duration) -> Report {
        let report = self.stop();
        for (status, body, took) in &report.refused {
            let lost_races = *status == 409 && body.contains("modified in storage since it was loaded");
            assert!(*status == 503 || lost_races, "refused with {status} after {took:?}: {body}");
            assert!(*took < limit, "a request took {took:?}");
        }
        report
    }
}
