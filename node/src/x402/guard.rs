//! Who may have a payment settled, and when. The node co-signs every x402
//! payment as its fee payer, so a payment that lands failed costs the node
//! its fee; a payer who makes payments fail (one source account spent by
//! several payments at once, a balance moved away between the check and
//! the landing) must pay for it alone, and never stop honest buyers.
//!
//! - **In flight**: at most one payment per payer and per source token
//!   account at a time (a second one from either waits for the first's
//!   answer: it would otherwise simulate against the same balance).
//! - **Failure budgets**, each per hour: per payer, per source account,
//!   and in all. Over its own budget a payer (or source) is refused until
//!   its oldest failure is an hour old; over the budget in all, only
//!   payers with a payment landed here and no failure since are served
//!   (so a burst of throwaway payers cannot stop a repeat buyer), and past
//!   a hard cap nobody is, so the node's fee spend on failed payments
//!   stays within the cap however many payers an attacker first makes
//!   trusted.
//! - **Refusal budgets**, the same for payments the simulation refused
//!   (they cost the node a simulation and a status read, no fee): per
//!   payer, per source, and in all for strangers.
//! - **Requests per client**: unpaid requests cost the node reads; each
//!   client IP gets a rate ([`Guard::allow_request`]).
//!
//! Owns admission and its bounded memory. Never reads the chain or judges
//! a payment (that is [`super::verify`]'s).

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use solana_sdk::pubkey::Pubkey;
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The window failure budgets count in.
pub const WINDOW: Duration = Duration::from_secs(3600);

/// Payers remembered as having landed a payment (beyond it, new ones are
/// not added: a stranger's payment still works, it only is not exempt
/// from the budget in all).
const MAX_TRUSTED: usize = 100_000;

/// Parties with failures remembered before idle ones are dropped.
const MAX_TRACKED: usize = 100_000;

/// The budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardConfig {
    /// Failed payments a payer may cause in an hour.
    pub failures_per_payer: usize,
    /// Failed payments from one source token account in an hour.
    pub failures_per_source: usize,
    /// Failed payments in all in an hour before payers with no landed
    /// payment are refused.
    pub failures_in_all: usize,
    /// Failed payments in all in an hour past which nobody is served
    /// (what bounds the fee payer's loss to failures).
    pub failures_cap: usize,
    /// Payments the simulation refused, per payer in an hour.
    pub refusals_per_payer: usize,
    /// Payments the simulation refused, per source account in an hour.
    pub refusals_per_source: usize,
    /// Refused payments in all in an hour before strangers wait.
    pub refusals_in_all: usize,
    /// Requests per minute per client IP (`0`: unlimited); a burst of a
    /// third of it.
    pub requests_per_minute: u32,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            failures_per_payer: 2,
            failures_per_source: 2,
            failures_in_all: 200,
            failures_cap: 1_000,
            refusals_per_payer: 10,
            refusals_per_source: 10,
            refusals_in_all: 2_000,
            requests_per_minute: 300,
        }
    }
}

/// A party to a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Party {
    /// The transfer's authority (the transaction's second signer).
    Payer(Pubkey),
    /// The token account the transfer spends.
    Source(Pubkey),
}

impl std::fmt::Display for Party {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Party::Payer(p) => write!(f, "payer {p}"),
            Party::Source(s) => write!(f, "source account {s}"),
        }
    }
}

/// Why a payment is not taken now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Another payment of this party is being settled.
    #[error("a payment of {0} is being settled; retry once it is answered")]
    InFlight(Party),
    /// This party's payments failed on chain too often.
    #[error("payments of {party} failed on chain {failures} times in the last hour; retry in {} s", retry_after.as_secs())]
    FailedTooOften {
        /// Who.
        party: Party,
        /// Failures in the window.
        failures: usize,
        /// When the oldest leaves the window.
        retry_after: Duration,
    },
    /// Failures in all are over budget and this payer has no payment
    /// landed here yet.
    #[error("too many payments failed on chain in the last hour; payers with a settled payment are still served, others retry in {} s", retry_after.as_secs())]
    StrangersPaused {
        /// When the oldest failure leaves the window.
        retry_after: Duration,
    },
    /// This party's payments were refused by the simulation too often.
    #[error("payments of {party} were refused by the simulation {refusals} times in the last hour; retry in {} s", retry_after.as_secs())]
    RefusedTooOften {
        /// Who.
        party: Party,
        /// Refusals in the window.
        refusals: usize,
        /// When the oldest leaves the window.
        retry_after: Duration,
    },
    /// Failures in all reached the hard cap: nobody is served.
    #[error("payments failed on chain at the node's cost past its hourly cap; retry in {} s", retry_after.as_secs())]
    Paused {
        /// When the oldest failure leaves the window.
        retry_after: Duration,
    },
}

impl Refused {
    /// Seconds to wait before retrying (`Retry-After`).
    pub fn retry_after(&self) -> Duration {
        match self {
            Refused::InFlight(_) => Duration::from_secs(2),
            Refused::FailedTooOften { retry_after, .. }
            | Refused::RefusedTooOften { retry_after, .. }
            | Refused::StrangersPaused { retry_after }
            | Refused::Paused { retry_after } => *retry_after,
        }
    }
}

#[derive(Default)]
struct Book {
    in_flight: HashSet<Party>,
    /// Payments that landed failed (at the node's cost).
    failures: Tally,
    /// Payments the simulation refused (a read's cost).
    refusals: Tally,
    /// Payers with a payment landed here and no failure since.
    trusted: HashSet<Pubkey>,
}

/// Events in the window, per party and in all.
#[derive(Default)]
struct Tally {
    per_party: HashMap<Party, VecDeque<Instant>>,
    all: VecDeque<Instant>,
}

impl Tally {
    /// Records one for both parties and in all.
    fn record(&mut self, parties: [Party; 2], now: Instant) {
        if self.per_party.len() >= MAX_TRACKED {
            self.per_party.retain(|_, times| {
                prune(times, now);
                !times.is_empty()
            });
        }
        for party in parties {
            self.per_party.entry(party).or_default().push_back(now);
        }
        self.all.push_back(now);
    }

    /// The first of `parties` at or over its budget: the party, its count
    /// in the window and when its oldest leaves.
    fn over(
        &mut self,
        parties: [(Party, usize); 2],
        now: Instant,
    ) -> Option<(Party, usize, Duration)> {
        for (party, budget) in parties {
            if let Some(times) = self.per_party.get_mut(&party) {
                prune(times, now);
                if times.len() >= budget {
                    return Some((party, times.len(), wait_of(times, now)));
                }
            }
        }
        None
    }

    /// Events in all in the window.
    fn in_all(&mut self, now: Instant) -> usize {
        prune(&mut self.all, now);
        self.all.len()
    }
}

/// Admission of payments and requests.
pub struct Guard {
    config: GuardConfig,
    book: Mutex<Book>,
    limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

fn prune(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
}

/// How long until the oldest of `times` leaves the window.
fn wait_of(times: &VecDeque<Instant>, now: Instant) -> Duration {
    times
        .front()
        .map_or(Duration::ZERO, |t| {
            WINDOW.saturating_sub(now.duration_since(*t))
        })
        .max(Duration::from_secs(1))
}

impl Guard {
    /// A guard with `config`'s budgets.
    pub fn new(config: GuardConfig) -> Arc<Guard> {
        let limiter = NonZeroU32::new(config.requests_per_minute).map(|per_minute| {
            let burst =
                NonZeroU32::new((config.requests_per_minute / 3).max(1)).unwrap_or(per_minute);
            RateLimiter::dashmap(Quota::per_minute(per_minute).allow_burst(burst))
        });
        Arc::new(Guard {
            config,
            book: Mutex::new(Book::default()),
            limiter,
        })
    }

    /// Whether a request from `ip` is within its rate.
    pub fn allow_request(&self, ip: IpAddr) -> bool {
        let Some(limiter) = &self.limiter else {
            return true;
        };
        if limiter.len() > MAX_TRACKED {
            limiter.retain_recent();
        }
        limiter.check_key(&ip).is_ok()
    }

    /// Admits a payment by `payer` from `source`, or says why not; the
    /// admission holds both in flight until it drops.
    pub fn admit(self: &Arc<Self>, payer: Pubkey, source: Pubkey) -> Result<Admission, Refused> {
        self.admit_at(payer, source, Instant::now())
    }

    fn admit_at(
        self: &Arc<Self>,
        payer: Pubkey,
        source: Pubkey,
        now: Instant,
    ) -> Result<Admission, Refused> {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let parties = [Party::Payer(payer), Party::Source(source)];
        for party in parties {
            if book.in_flight.contains(&party) {
                return Err(Refused::InFlight(party));
            }
        }
        let c = &self.config;
        if let Some((party, failures, retry_after)) = book.failures.over(
            [
                (parties[0], c.failures_per_payer),
                (parties[1], c.failures_per_source),
            ],
            now,
        ) {
            return Err(Refused::FailedTooOften {
                party,
                failures,
                retry_after,
            });
        }
        if let Some((party, refusals, retry_after)) = book.refusals.over(
            [
                (parties[0], c.refusals_per_payer),
                (parties[1], c.refusals_per_source),
            ],
            now,
        ) {
            return Err(Refused::RefusedTooOften {
                party,
                refusals,
                retry_after,
            });
        }
        let failures = book.failures.in_all(now);
        if failures >= c.failures_cap {
            return Err(Refused::Paused {
                retry_after: wait_of(&book.failures.all, now),
            });
        }
        let trusted = book.trusted.contains(&payer);
        if !trusted && failures >= c.failures_in_all {
            return Err(Refused::StrangersPaused {
                retry_after: wait_of(&book.failures.all, now),
            });
        }
        if !trusted && book.refusals.in_all(now) >= c.refusals_in_all {
            return Err(Refused::StrangersPaused {
                retry_after: wait_of(&book.refusals.all, now),
            });
        }
        book.in_flight.extend(parties);
        Ok(Admission {
            guard: self.clone(),
            payer,
            source,
        })
    }

    fn failed_at(&self, payer: Pubkey, source: Pubkey, now: Instant) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.failures
            .record([Party::Payer(payer), Party::Source(source)], now);
        // a failure ends a payer's exemption from the budget in all
        book.trusted.remove(&payer);
    }

    fn refused_at(&self, payer: Pubkey, source: Pubkey, now: Instant) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.refusals
            .record([Party::Payer(payer), Party::Source(source)], now);
        book.trusted.remove(&payer);
    }

    fn landed(&self, payer: Pubkey) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        if book.trusted.len() < MAX_TRUSTED {
            book.trusted.insert(payer);
        }
    }

    /// Failed payments in all within the window.
    pub fn failures_in_window(&self) -> usize {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.failures.in_all(Instant::now())
    }

    /// Payments the simulation refused in all within the window.
    pub fn refusals_in_window(&self) -> usize {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.refusals.in_all(Instant::now())
    }
}

/// A payment being settled; its payer and source are free again when it
/// drops. Say how it ended with [`Admission::landed`] or
/// [`Admission::failed`] (neither: it never went out, or may still land).
pub struct Admission {
    guard: Arc<Guard>,
    payer: Pubkey,
    source: Pubkey,
}

impl Admission {
    /// It landed and paid: the payer is known good.
    pub fn landed(self) {
        self.guard.landed(self.payer);
    }

    /// It landed failed, at the node's cost: counted against the payer,
    /// the source and the total.
    pub fn failed(self) {
        self.guard
            .failed_at(self.payer, self.source, Instant::now());
    }

    /// The simulation refused it (never sent; a read's cost): counted
    /// against the payer, the source and the total of refusals.
    pub fn refused(self) {
        self.guard
            .refused_at(self.payer, self.source, Instant::now());
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut book = self.guard.book.lock().unwrap_or_else(|p| p.into_inner());
        book.in_flight.remove(&Party::Payer(self.payer));
        book.in_flight.remove(&Party::Source(self.source));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(per_payer: usize, per_source: usize, in_all: usize) -> Arc<Guard> {
        Guard::new(GuardConfig {
            failures_per_payer: per_payer,
            failures_per_source: per_source,
            failures_in_all: in_all,
            requests_per_minute: 0,
            ..GuardConfig::default()
        })
    }

    #[test]
    fn one_payment_in_flight_per_payer_and_per_source() {
        let g = guard(5, 5, 50);
        let (payer, source) = (Pubkey::new_unique(), Pubkey::new_unique());
        let first = g.admit(payer, source).unwrap();
        assert_eq!(
            g.admit(payer, Pubkey::new_unique()).err(),
            Some(Refused::InFlight(Party::Payer(payer)))
        );
        assert_eq!(
            g.admit(Pubkey::new_unique(), source).err(),
            Some(Refused::InFlight(Party::Source(source))),
            "another payer spending the same account waits too"
        );
        drop(first);
        assert!(g.admit(payer, source).is_ok(), "answered: free again");
    }

    #[test]
    fn failures_stop_the_payer_and_the_source_not_everyone() {
        let g = guard(2, 3, 50);
        let (payer, source) = (Pubkey::new_unique(), Pubkey::new_unique());
        let t0 = Instant::now();
        for _ in 0..2 {
            let a = g.admit_at(payer, source, t0).unwrap();
            g.failed_at(a.payer, a.source, t0);
        }
        match g.admit_at(payer, Pubkey::new_unique(), t0) {
            Err(Refused::FailedTooOften {
                party,
                failures,
                retry_after,
            }) => {
                assert_eq!((party, failures), (Party::Payer(payer), 2));
                assert!(retry_after > Duration::from_secs(3500));
            }
            other => panic!("{:?}", other.err()),
        }
        // the source has one failure left, then it is refused too
        let other_payer = Pubkey::new_unique();
        let a = g.admit_at(other_payer, source, t0).unwrap();
        g.failed_at(a.payer, a.source, t0);
        drop(a);
        assert!(matches!(
            g.admit_at(Pubkey::new_unique(), source, t0),
            Err(Refused::FailedTooOften {
                party: Party::Source(_),
                ..
            })
        ));
        // an honest payer is untouched
        assert!(g
            .admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0)
            .is_ok());
        // an hour later the payer is forgiven
        assert!(g.admit_at(payer, source, t0 + WINDOW).is_ok());
    }

    #[test]
    fn over_the_total_only_strangers_wait() {
        let g = guard(1, 1, 3);
        let t0 = Instant::now();
        let regular = Pubkey::new_unique();
        g.admit_at(regular, Pubkey::new_unique(), t0)
            .unwrap()
            .landed();
        for _ in 0..3 {
            let a = g
                .admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0)
                .unwrap();
            g.failed_at(a.payer, a.source, t0);
        }
        assert_eq!(g.failures_in_window(), 3);
        assert!(matches!(
            g.admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0),
            Err(Refused::StrangersPaused { .. })
        ));
        assert!(
            g.admit_at(regular, Pubkey::new_unique(), t0).is_ok(),
            "a payer with a landed payment is still served"
        );
    }

    /// Payers an attacker first made trusted (one landed payment each)
    /// lose the exemption at their first failure, and past the hard cap
    /// nobody is served: the fee payer's loss is bounded.
    #[test]
    fn trust_ends_at_a_failure_and_the_cap_binds_everyone() {
        let g = Guard::new(GuardConfig {
            failures_per_payer: 5,
            failures_per_source: 5,
            failures_in_all: 2,
            failures_cap: 4,
            requests_per_minute: 0,
            ..GuardConfig::default()
        });
        let t0 = Instant::now();
        let trusted: Vec<Pubkey> = (0..6).map(|_| Pubkey::new_unique()).collect();
        for p in &trusted {
            g.admit_at(*p, Pubkey::new_unique(), t0).unwrap().landed();
        }
        // two failures: strangers wait, the trusted go on
        for p in &trusted[..2] {
            let a = g.admit_at(*p, Pubkey::new_unique(), t0).unwrap();
            g.failed_at(a.payer, a.source, t0);
        }
        assert!(matches!(
            g.admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0),
            Err(Refused::StrangersPaused { .. })
        ));
        assert!(
            matches!(
                g.admit_at(trusted[0], Pubkey::new_unique(), t0),
                Err(Refused::StrangersPaused { .. })
            ),
            "a failure ended its exemption"
        );
        for p in &trusted[2..4] {
            let a = g.admit_at(*p, Pubkey::new_unique(), t0).unwrap();
            g.failed_at(a.payer, a.source, t0);
        }
        assert!(
            matches!(
                g.admit_at(trusted[5], Pubkey::new_unique(), t0),
                Err(Refused::Paused { .. })
            ),
            "past the cap nobody is served"
        );
        assert!(g
            .admit_at(trusted[5], Pubkey::new_unique(), t0 + WINDOW)
            .is_ok());
    }

    /// Payments the simulation refuses are budgeted per payer and per
    /// source, and in all for strangers.
    #[test]
    fn simulation_refusals_are_budgeted() {
        let g = Guard::new(GuardConfig {
            refusals_per_payer: 2,
            refusals_per_source: 3,
            refusals_in_all: 5,
            requests_per_minute: 0,
            ..GuardConfig::default()
        });
        let t0 = Instant::now();
        let (payer, source) = (Pubkey::new_unique(), Pubkey::new_unique());
        for _ in 0..2 {
            let a = g.admit_at(payer, source, t0).unwrap();
            g.refused_at(a.payer, a.source, t0);
        }
        assert!(matches!(
            g.admit_at(payer, Pubkey::new_unique(), t0),
            Err(Refused::RefusedTooOften {
                party: Party::Payer(_),
                refusals: 2,
                ..
            })
        ));
        let regular = Pubkey::new_unique();
        g.admit_at(regular, Pubkey::new_unique(), t0)
            .unwrap()
            .landed();
        for _ in 0..3 {
            let a = g
                .admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0)
                .unwrap();
            g.refused_at(a.payer, a.source, t0);
        }
        assert_eq!(g.refusals_in_window(), 5);
        assert!(matches!(
            g.admit_at(Pubkey::new_unique(), Pubkey::new_unique(), t0),
            Err(Refused::StrangersPaused { .. })
        ));
        assert!(g.admit_at(regular, Pubkey::new_unique(), t0).is_ok());
    }

    #[test]
    fn requests_are_rate_limited_per_ip() {
        let g = Guard::new(GuardConfig {
            requests_per_minute: 6,
            ..GuardConfig::default()
        });
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let allowed = (0..10).filter(|_| g.allow_request(a)).count();
        assert_eq!(allowed, 2, "a burst of a third of the minute");
        assert!(g.allow_request(b), "another client has its own allowance");
    }
}
