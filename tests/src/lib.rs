//! End-to-end test harness (validator start/stop lands with the localnet issue).
