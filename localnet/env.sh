# shellcheck shell=bash
# Shared paths for the localnet scripts. Sourced, never executed.
# Everything heavy lives in a cache outside the clone so a fresh checkout
# (and CI) reuses it: the validator binary, its build dir, npm tools, and
# the workspace's CARGO_TARGET_DIR.
BRAINCTL_CACHE="${BRAINCTL_CACHE:-$HOME/.cache/brainctl}"
AGAVE_VERSION="${AGAVE_VERSION:-4.2.2}"
BRAINCTL_VALIDATOR_ROOT="${BRAINCTL_VALIDATOR_ROOT:-$BRAINCTL_CACHE/validator-$AGAVE_VERSION}"
BRAINCTL_VALIDATOR_BIN="${BRAINCTL_VALIDATOR_BIN:-$BRAINCTL_VALIDATOR_ROOT/bin/solana-test-validator}"
BRAINCTL_NPM_DIR="${BRAINCTL_NPM_DIR:-$BRAINCTL_CACHE/npm}"
BRAINCTL_STATE_DIR="${BRAINCTL_STATE_DIR:-$BRAINCTL_CACHE/localnet-state}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$BRAINCTL_CACHE/target}"
export BRAINCTL_CACHE AGAVE_VERSION BRAINCTL_VALIDATOR_ROOT BRAINCTL_VALIDATOR_BIN BRAINCTL_NPM_DIR BRAINCTL_STATE_DIR
